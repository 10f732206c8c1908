package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
)

// TestServerTLS: the admission endpoint speaks TLS 1.3 only, never
// plaintext, and picks up a new certificate without a restart.
func TestServerTLS(t *testing.T) {
	dir := t.TempDir()
	write := func(b *certs.Bundle) {
		t.Helper()
		for name, data := range map[string][]byte{"tls.crt": b.ServerCert, "tls.key": b.ServerKey} {
			tmp := filepath.Join(dir, name+".tmp")
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, err := certs.Issue("depctrl-webhook", []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write(first)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, "ok") })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Addr: addr, CertDir: dir, Validator: ok, Log: logr.Discard()}).Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})

	client := func(ca []byte, maxVersion uint16) *http.Client {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: maxVersion, MinVersion: tls.VersionTLS12},
		}}
	}
	get := func(c *http.Client, scheme string) error {
		resp, err := c.Get(scheme + "://" + addr + ValidatePath)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for get(client(first.CACert, tls.VersionTLS13), "https") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the server never answered over TLS 1.3")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := get(client(first.CACert, tls.VersionTLS12), "https"); err == nil {
		t.Error("a TLS 1.2 client was served")
	}
	if err := get(&http.Client{Timeout: 5 * time.Second}, "http"); err == nil {
		t.Error("a plaintext request was served")
	}

	// A rotated certificate from a new CA is served without a restart.
	second, err := certs.Issue("depctrl-webhook", []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write(second)
	deadline = time.Now().Add(20 * time.Second)
	for {
		err := get(client(second.CACert, tls.VersionTLS13), "https")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new certificate was not picked up: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := get(client(first.CACert, tls.VersionTLS13), "https"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("the old CA still verifies the server after the rotation: %v", err)
	}
}
