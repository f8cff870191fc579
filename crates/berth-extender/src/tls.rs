//! TLS for an extender, as kube-scheduler's makeTransport sets it up: the Policy's
//! `tlsConfig` (CA, client certificate, server name, insecure), and `enableHTTPS` without a
//! CA meaning "do not verify the server", as upstream does.

use std::sync::Arc;

use berth_policy::{Extender, ExtenderTlsConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::error::ConfigError;

/// The rustls client configuration for `extender`.
pub fn client_config(extender: &Extender) -> Result<ClientConfig, ConfigError> {
    let url = &extender.url_prefix;
    let tls = extender.tls_config.clone().unwrap_or_default();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls_error = |problem: String| ConfigError::Tls {
        url: url.clone(),
        problem,
    };
    let ca = material(url, &tls.ca_data, &tls.ca_file, "caFile")?;
    if tls.insecure && ca.is_some() {
        return Err(tls_error(
            "insecure is true and a CA is given (caData or caFile); upstream refuses this \
             combination: drop one of them"
                .into(),
        ));
    }
    let insecure = tls.insecure || (extender.enable_https && ca.is_none());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(e.to_string()))?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        match &ca {
            Some(pem) => {
                let certs = certificates(pem).map_err(|e| tls_error(format!("CA: {e}")))?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(tls_error(
                        "the CA (caData or caFile) holds no usable PEM certificate".into(),
                    ));
                }
            }
            None => {
                let native = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(native.certs);
            }
        }
        builder.with_root_certificates(roots)
    };
    let cert = material(url, &tls.cert_data, &tls.cert_file, "certFile")?;
    let key = material(url, &tls.key_data, &tls.key_file, "keyFile")?;
    match (cert, key) {
        (None, None) => Ok(builder.with_no_client_auth()),
        (Some(cert), Some(key)) => {
            let chain =
                certificates(&cert).map_err(|e| tls_error(format!("client certificate: {e}")))?;
            if chain.is_empty() {
                return Err(tls_error(
                    "the client certificate (certData or certFile) holds no PEM certificate".into(),
                ));
            }
            let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| {
                tls_error(format!(
                    "the client key (keyData or keyFile) is not a PEM private key: {e}"
                ))
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| tls_error(format!("client certificate and key: {e}")))
        }
        (Some(_), None) => Err(tls_error(
            "a client certificate without a key: give keyData or keyFile too".into(),
        )),
        (None, Some(_)) => Err(tls_error(
            "a client key without a certificate: give certData or certFile too".into(),
        )),
    }
}

/// The server name to check the certificate against, when `serverName` overrides the host.
pub fn server_name(tls: Option<&ExtenderTlsConfig>) -> Option<String> {
    tls.map(|t| t.server_name.clone()).filter(|s| !s.is_empty())
}

/// Inline data takes precedence over the file, as in client-go.
fn material(
    url: &str,
    data: &[u8],
    file: &str,
    field: &'static str,
) -> Result<Option<Vec<u8>>, ConfigError> {
    if !data.is_empty() {
        return Ok(Some(data.to_vec()));
    }
    if file.is_empty() {
        return Ok(None);
    }
    std::fs::read(file)
        .map(Some)
        .map_err(|e| ConfigError::TlsFile {
            url: url.to_string(),
            field,
            path: file.to_string(),
            problem: e.to_string(),
        })
}

fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not PEM certificates: {e}"))
}

/// Go's InsecureSkipVerify: any server certificate is accepted, but the handshake's
/// signatures are still checked.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
