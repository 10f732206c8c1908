package certs

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

func TestIssueVerifies(t *testing.T) {
	b, err := Issue("depctrl-webhook", []string{"depctrl-webhook.depctrl.svc", "127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(b.ServerCert, b.ServerKey)
	if err != nil {
		t.Fatalf("serving pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.CACert) {
		t.Fatal("CA does not parse")
	}
	for _, host := range []string{"depctrl-webhook.depctrl.svc", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "elsewhere.example", Roots: pool}); err == nil {
		t.Error("certificate must not verify for a host it does not name")
	}
	if got, err := NotAfter(b.ServerCert); err != nil || !got.Equal(b.NotAfter) {
		t.Errorf("NotAfter = %v, %v; want %v", got, err, b.NotAfter)
	}
}

func TestIssueNeedsHosts(t *testing.T) {
	if _, err := Issue("x", nil, time.Hour); err == nil {
		t.Fatal("want an error without hosts")
	}
}
