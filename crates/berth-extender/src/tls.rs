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

/// Where an extender's CA and client certificate come from, as the Policy names them
/// (`tlsConfig.caFile="/etc/ca.crt"`, `tlsConfig.caData`): to say which to fix when a
/// connection fails.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSources {
    /// The CA the server's certificate must be signed by; None: the system's roots.
    pub ca: Option<String>,
    /// The client certificate; None: no client certificate is offered.
    pub client_cert: Option<String>,
}

/// The rustls client configuration for `extender`, and where its material came from.
pub fn client_config(extender: &Extender) -> Result<(ClientConfig, TlsSources), ConfigError> {
    let url = &extender.url_prefix;
    let tls = extender.tls_config.clone().unwrap_or_default();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls_error = |problem: String| ConfigError::Tls {
        url: url.clone(),
        problem,
    };
    let ca = material(url, &tls.ca_data, &tls.ca_file, "caData", "caFile")?;
    if tls.insecure && ca.is_some() {
        return Err(tls_error(
            "insecure is true and a CA is given (caData or caFile); upstream refuses this \
             combination: drop one of them"
                .into(),
        ));
    }
    let mut sources = TlsSources {
        ca: ca.as_ref().map(|m| m.source.clone()),
        client_cert: None,
    };
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
            Some(ca) => {
                let certs = certificates(ca).map_err(tls_error)?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(tls_error(format!(
                        "{} holds no CA certificate that can be used (each failed to parse)",
                        ca.source
                    )));
                }
            }
            None => {
                let native = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(native.certs);
            }
        }
        builder.with_root_certificates(roots)
    };
    let cert = material(url, &tls.cert_data, &tls.cert_file, "certData", "certFile")?;
    let key = material(url, &tls.key_data, &tls.key_file, "keyData", "keyFile")?;
    let config = match (cert, key) {
        (None, None) => builder.with_no_client_auth(),
        (Some(cert), Some(key)) => {
            let chain = certificates(&cert).map_err(tls_error)?;
            let der = PrivateKeyDer::from_pem_slice(&key.bytes).map_err(|e| {
                tls_error(format!(
                    "{} holds no PEM private key (expected \"-----BEGIN PRIVATE KEY-----\", \
                     or an EC or RSA one): {e}",
                    key.source
                ))
            })?;
            let config = builder
                .with_client_auth_cert(chain, der)
                .map_err(|e| match e {
                    rustls::Error::InconsistentKeys(_) => tls_error(format!(
                        "{} and its key do not match ({} is the key of another \
                         certificate)",
                        cert.source, key.source
                    )),
                    e => tls_error(format!("{} and {}: {e}", cert.source, key.source)),
                })?;
            sources.client_cert = Some(cert.source);
            config
        }
        (Some(_), None) => {
            return Err(tls_error(
                "a client certificate without a key: give keyData or keyFile too".into(),
            ));
        }
        (None, Some(_)) => {
            return Err(tls_error(
                "a client key without a certificate: give certData or certFile too".into(),
            ));
        }
    };
    Ok((config, sources))
}

/// The server name to check the certificate against, when `serverName` overrides the host.
pub fn server_name(tls: Option<&ExtenderTlsConfig>) -> Option<String> {
    tls.map(|t| t.server_name.clone()).filter(|s| !s.is_empty())
}

/// TLS material and where it came from.
struct Material {
    bytes: Vec<u8>,
    /// `tlsConfig.caData`, or `tlsConfig.caFile="/path"`.
    source: String,
}

/// Inline data takes precedence over the file, as in client-go.
fn material(
    url: &str,
    data: &[u8],
    file: &str,
    data_field: &'static str,
    file_field: &'static str,
) -> Result<Option<Material>, ConfigError> {
    if !data.is_empty() {
        return Ok(Some(Material {
            bytes: data.to_vec(),
            source: format!("tlsConfig.{data_field}"),
        }));
    }
    if file.is_empty() {
        return Ok(None);
    }
    std::fs::read(file)
        .map(|bytes| {
            Some(Material {
                bytes,
                source: format!("tlsConfig.{file_field}={file:?}"),
            })
        })
        .map_err(|e| ConfigError::TlsFile {
            url: url.to_string(),
            field: file_field,
            path: file.to_string(),
            problem: e.to_string(),
        })
}

/// The PEM certificates of `material`: at least one.
fn certificates(material: &Material) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(&material.bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{} is not valid PEM: {e}", material.source))?;
    if certs.is_empty() {
        return Err(format!(
            "{} holds no PEM certificate (expected \"-----BEGIN CERTIFICATE-----\")",
            material.source
        ));
    }
    Ok(certs)
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

/// What to fix when a connection to an extender failed with `error` (anywhere in its chain
/// of causes), for the TLS mistakes Berth can recognise; None for any other failure.
/// `https` is whether the urlPrefix says https.
pub fn explain(
    error: &(dyn std::error::Error + 'static),
    https: bool,
    sources: &TlsSources,
) -> Option<String> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(tls) = rustls_error(e) {
            return explain_tls(tls, https, sources);
        }
        if let Some(http) = e.downcast_ref::<hyper::Error>()
            && !https
            && (http.is_parse() || http.is_incomplete_message())
        {
            return Some(
                "the extender closed the connection or did not answer in HTTP: if it serves \
                 HTTPS, its urlPrefix must start with https://"
                    .into(),
            );
        }
        next = e.source();
    }
    None
}

/// A rustls error, as is or inside the io::Errors a TLS stream and the connector wrap it
/// in (whose `source()` skips the error they wrap).
fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut e = e;
    loop {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        e = e.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
}

fn explain_tls(e: &rustls::Error, https: bool, sources: &TlsSources) -> Option<String> {
    use rustls::{AlertDescription as Alert, CertificateError as Cert};
    let text = match e {
        rustls::Error::InvalidCertificate(Cert::UnknownIssuer | Cert::BadSignature) => {
            match &sources.ca {
                Some(ca) => format!(
                    "the extender's certificate is not signed by the configured CA ({ca}): \
                     configure the CA that signed it, or check that urlPrefix names the right \
                     server"
                ),
                None => "the extender's certificate is not signed by a CA this machine trusts: \
                         set tlsConfig.caFile or caData to the CA that signed it (or \
                         tlsConfig.insecure to skip verification)"
                    .into(),
            }
        }
        rustls::Error::InvalidCertificate(
            Cert::NotValidForName | Cert::NotValidForNameContext { .. },
        ) => "the extender's certificate does not name the host of urlPrefix: use a host it \
              names, or set tlsConfig.serverName to one"
            .into(),
        rustls::Error::InvalidCertificate(
            Cert::Expired | Cert::ExpiredContext { .. } | Cert::NotValidYet,
        )
        | rustls::Error::InvalidCertificate(Cert::NotValidYetContext { .. }) => {
            "the extender's certificate is expired or not yet valid: renew it (or check this \
             machine's clock)"
                .into()
        }
        rustls::Error::InvalidCertificate(other) => format!(
            "the extender's certificate was refused ({other:?}): give it a certificate for the \
             host of urlPrefix, signed by the configured CA"
        ),
        rustls::Error::AlertReceived(Alert::CertificateRequired | Alert::HandshakeFailure)
            if sources.client_cert.is_none() =>
        {
            "the extender requires a client certificate: set tlsConfig.certFile and keyFile (or \
             certData and keyData) to one signed by a CA it trusts"
                .into()
        }
        rustls::Error::AlertReceived(
            Alert::BadCertificate
            | Alert::UnknownCA
            | Alert::CertificateUnknown
            | Alert::CertificateRequired
            | Alert::HandshakeFailure
            | Alert::AccessDenied
            | Alert::DecryptError,
        ) => format!(
            "the extender refused the client certificate ({}): give one signed by a CA it \
             trusts",
            sources.client_cert.as_deref().unwrap_or("none")
        ),
        rustls::Error::InvalidMessage(_)
        | rustls::Error::InappropriateMessage { .. }
        | rustls::Error::InappropriateHandshakeMessage { .. }
            if https =>
        {
            "the extender does not speak TLS: if it serves plain HTTP, its urlPrefix must start \
             with http:// (and enableHTTPS be false)"
                .into()
        }
        _ => return None,
    };
    Some(text)
}
