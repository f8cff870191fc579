// Command decode reads Berth's protobuf encodings of a Binding and an Event (the golden
// files beside it, which berth-daemon's protobuf tests compare their encodings with),
// decodes them with upstream's protobuf serializer, as kube-apiserver does, and writes each
// object's JSON, which those tests compare with the JSON fallback's body:
//
//	cd crates/berth-daemon/testdata/protobuf && go run .
package main

import (
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

func main() {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, eventsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			fail(err)
		}
	}
	serializer := protobuf.NewSerializer(scheme, scheme)
	for _, name := range []string{"binding", "event"} {
		data, err := os.ReadFile(name + ".pb")
		if err != nil {
			fail(err)
		}
		object, gvk, err := serializer.Decode(data, nil, nil)
		if err != nil {
			fail(fmt.Errorf("%s.pb: %w", name, err))
		}
		object.GetObjectKind().SetGroupVersionKind(*gvk)
		text, err := json.MarshalIndent(object, "", "  ")
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(name+".json", append(text, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
