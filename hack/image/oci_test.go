package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
)

// TestArchive builds the runtime image and reads it back as an OCI consumer
// would: layout, index, manifest, config and layer must be consistent by
// digest, and the commands the Deployments run must be static executables
// in the image. The binaries are a small static executable under both
// names: what the archive does with them does not depend on what they
// are, and compressing the runtime's own (tens of MiB) twice takes minutes
// under the race detector. make image builds the real one.
func TestArchive(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"depctrl-controller", "depctrl-webhook"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./testdata/static")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building a static executable: %v\n%s", err, out)
		}
	}
	var archive bytes.Buffer
	manifestDigest, err := Build(&archive, Spec{
		ControllerBinary: filepath.Join(dir, "depctrl-controller"),
		WebhookBinary:    filepath.Join(dir, "depctrl-webhook"),
		Tag:              "v0.0.0-test", Arch: "amd64",
	})
	if err != nil {
		t.Fatal(err)
	}

	files, _ := untar(t, archive.Bytes())
	var layout ocispec.ImageLayout
	decode(t, files[ocispec.ImageLayoutFile], &layout)
	if layout.Version != ocispec.ImageLayoutVersion {
		t.Errorf("oci-layout version %q", layout.Version)
	}
	blob := func(d ocispec.Descriptor) []byte {
		t.Helper()
		data, ok := files["blobs/sha256/"+d.Digest.Encoded()]
		if !ok {
			t.Fatalf("blob %s missing", d.Digest)
		}
		if digest.FromBytes(data) != d.Digest || int64(len(data)) != d.Size {
			t.Fatalf("blob %s does not match its descriptor", d.Digest)
		}
		return data
	}
	var index ocispec.Index
	decode(t, files["index.json"], &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != manifestDigest || index.Manifests[0].Annotations[ocispec.AnnotationRefName] != "v0.0.0-test" {
		t.Fatalf("index %+v", index)
	}
	var manifest ocispec.Manifest
	decode(t, blob(index.Manifests[0]), &manifest)
	if manifest.MediaType != ocispec.MediaTypeImageManifest || len(manifest.Layers) != 1 {
		t.Fatalf("manifest %+v", manifest)
	}
	var config ocispec.Image
	decode(t, blob(manifest.Config), &config)
	if config.OS != "linux" || config.Config.User != nonRootUser || len(config.Config.Entrypoint) != 1 || config.Config.Entrypoint[0] != deploy.ControllerBinary {
		t.Errorf("config %+v", config.Config)
	}

	zr, err := gzip.NewReader(bytes.NewReader(blob(manifest.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layerTar, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != digest.FromBytes(layerTar) {
		t.Error("the config's diff ID does not match the layer")
	}
	rootfs, modes := untar(t, layerTar)
	for _, cmd := range []string{deploy.ControllerBinary, deploy.WebhookBinary} {
		data, ok := rootfs[cmd[1:]]
		if !ok {
			t.Errorf("%s is not in the image", cmd)
			continue
		}
		if modes[cmd[1:]]&0o111 == 0 {
			t.Errorf("%s is not executable", cmd)
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Errorf("%s is not an executable: %v", cmd, err)
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s needs a dynamic loader the image does not have", cmd)
			}
		}
	}

	// The same binaries give the same image.
	var again bytes.Buffer
	d2, err := Build(&again, Spec{ControllerBinary: filepath.Join(dir, "depctrl-controller"), WebhookBinary: filepath.Join(dir, "depctrl-webhook"), Tag: "v0.0.0-test", Arch: "amd64"})
	if err != nil || d2 != manifestDigest || !bytes.Equal(again.Bytes(), archive.Bytes()) {
		t.Errorf("the archive is not reproducible: %s then %s (%v)", manifestDigest, d2, err)
	}
}

func TestRefusesDynamicBinaries(t *testing.T) {
	f, err := elf.Open("/bin/sh")
	if err != nil {
		t.Skip("no ELF /bin/sh here")
	}
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	_ = f.Close()
	if !dynamic {
		t.Skip("/bin/sh is static here")
	}
	if err := checkStatic("/bin/sh"); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamically linked binary must be refused with advice, got %v", err)
	}
}

// untar reads the archive data: the contents of its regular files and the
// mode of every entry, by name.
func untar(t *testing.T, data []byte) (files map[string][]byte, modes map[string]int64) {
	t.Helper()
	files, modes = map[string][]byte{}, map[string]int64{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, modes
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = h.Mode
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

func decode(t *testing.T, data []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
}
