// Command image builds the runtime image as an OCI image archive without a
// container engine: one layer holding the two static binaries at the paths
// the rendered Deployments run, on an empty base, as a non-root user.
//
//	go run ./hack/image -controller bin/image/depctrl-controller \
//	  -webhook bin/image/depctrl-webhook -tag v1.2.3 -o bin/depctrl-runtime.oci.tar
//
// The archive is an OCI image layout in a tar, which `skopeo copy
// oci-archive:...`, `podman load` and `crane push` accept.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
)

func main() {
	controller := flag.String("controller", "", "the depctrl-controller binary (static, linux)")
	webhook := flag.String("webhook", "", "the depctrl-webhook binary (static, linux)")
	tag := flag.String("tag", "dev", "the image tag, recorded as the reference name")
	out := flag.String("o", "depctrl-runtime.oci.tar", "where to write the archive")
	arch := flag.String("arch", runtime.GOARCH, "the architecture of the binaries")
	flag.Parse()
	if *controller == "" || *webhook == "" {
		fmt.Fprintln(os.Stderr, "image: -controller and -webhook are required")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	digest, err := Build(f, Spec{ControllerBinary: *controller, WebhookBinary: *webhook, Tag: *tag, Arch: *arch})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(*out)
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (manifest %s, tag %s)\n", *out, digest, *tag)
}
