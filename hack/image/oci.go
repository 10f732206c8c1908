package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
)

// nonRootUser is the user the image runs as; the Deployments say the same.
const nonRootUser = "65532:65532"

// epoch is every timestamp in the image, so that the same binaries always
// give the same digest.
var epoch = time.Unix(0, 0).UTC()

// Spec is what goes into the image.
type Spec struct {
	ControllerBinary string
	WebhookBinary    string
	Tag              string
	Arch             string
}

type blob struct {
	desc ocispec.Descriptor
	data []byte
}

func newBlob(mediaType string, data []byte) blob {
	return blob{desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}, data: data}
}

// Build writes the OCI archive to w and returns the manifest digest.
func Build(w io.Writer, s Spec) (digest.Digest, error) {
	files := map[string]string{deploy.ControllerBinary: s.ControllerBinary, deploy.WebhookBinary: s.WebhookBinary}
	for _, p := range []string{deploy.ControllerBinary, deploy.WebhookBinary} {
		if err := checkStatic(files[p]); err != nil {
			return "", err
		}
	}
	layerTar, err := layer([]string{deploy.ControllerBinary, deploy.WebhookBinary}, files)
	if err != nil {
		return "", err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = epoch
	if _, err := zw.Write(layerTar); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	layerBlob := newBlob(ocispec.MediaTypeImageLayerGzip, gz.Bytes())

	created := epoch
	config := ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{OS: "linux", Architecture: s.Arch},
		Config: ocispec.ImageConfig{
			User:       nonRootUser,
			Entrypoint: []string{deploy.ControllerBinary},
			WorkingDir: "/",
			Labels: map[string]string{
				"org.opencontainers.image.title":       "depctrl-runtime",
				"org.opencontainers.image.description": "depctrl controller (" + deploy.ControllerBinary + ") and webhook (" + deploy.WebhookBinary + ")",
				"org.opencontainers.image.version":     s.Tag,
			},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromBytes(layerTar)}},
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return "", err
	}
	configBlob := newBlob(ocispec.MediaTypeImageConfig, configJSON)

	manifest := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configBlob.desc,
		Layers:    []ocispec.Descriptor{layerBlob.desc},
	}
	manifestJSON, err := json.Marshal(manifest)
	if err != nil {
		return "", err
	}
	manifestBlob := newBlob(ocispec.MediaTypeImageManifest, manifestJSON)
	manifestBlob.desc.Annotations = map[string]string{ocispec.AnnotationRefName: s.Tag}
	manifestBlob.desc.Platform = &config.Platform

	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestBlob.desc},
	})
	if err != nil {
		return "", err
	}
	layout, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})

	tw := tar.NewWriter(w)
	entries := []struct {
		name string
		data []byte
	}{{ocispec.ImageLayoutFile, layout}, {"index.json", index}}
	for _, b := range []blob{layerBlob, configBlob, manifestBlob} {
		entries = append(entries, struct {
			name string
			data []byte
		}{"blobs/" + b.desc.Digest.Algorithm().String() + "/" + b.desc.Digest.Encoded(), b.data})
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch}); err != nil {
			return "", err
		}
	}
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: epoch}); err != nil {
			return "", err
		}
		if _, err := tw.Write(e.data); err != nil {
			return "", err
		}
	}
	return manifestBlob.desc.Digest, tw.Close()
}

// layer is the root filesystem: the binaries and their directories.
func layer(paths []string, files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, p := range paths {
		var parents []string
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: epoch}); err != nil {
				return nil, err
			}
		}
		data, err := os.ReadFile(files[p])
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", files[p], err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p[1:], Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStatic refuses binaries that need a dynamic loader: the image has
// no libc.
func checkStatic(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s is not a Linux executable: %w", file, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; build it with CGO_ENABLED=0", file)
		}
	}
	return nil
}
