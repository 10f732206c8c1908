package certs

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
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

// handshake serves chainPEM (leaf first) on one end of a pipe and reports
// whether a client trusting rootsPEM completes a TLS handshake for host, as
// kcp's call to the webhook would.
func handshake(t *testing.T, chainPEM, keyPEM, rootsPEM []byte, host string) error {
	t.Helper()
	pair, err := tls.X509KeyPair(chainPEM, keyPEM)
	if err != nil {
		t.Fatalf("serving pair: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootsPEM) {
		t.Fatal("roots do not parse")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		server := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13})
		_ = server.Handshake()
		_ = server.Close()
	}()
	conn, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return tls.Client(conn, &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS13}).Handshake()
}

func TestCrossSign(t *testing.T) {
	host := "depctrl-webhook.depctrl.svc"
	oldCA, oldKey, err := NewCA("old-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	newCA, newKey, err := NewCA("new-ca", 10*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := NewCA("other-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := IssueServing(newCA, newKey, "w", []string{host}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cross, err := CrossSign(newCA, oldCA, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	chain := append(append([]byte{}, serving.ServerCert...), cross...)

	tests := []struct {
		name    string
		chain   []byte
		roots   []byte
		wantErr bool
	}{
		{name: "a client that trusts only the old CA", chain: chain, roots: oldCA},
		{name: "a client that trusts only the new CA", chain: chain, roots: newCA},
		{name: "a client given both", chain: chain, roots: append(append([]byte{}, newCA...), oldCA...)},
		{name: "a client that trusts neither", chain: chain, roots: other, wantErr: true},
		// Without the intermediate the old CA is not enough: what the
		// cross-signature is for.
		{name: "no intermediate, old CA only", chain: serving.ServerCert, roots: oldCA, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := handshake(t, tt.chain, serving.ServerKey, tt.roots, host)
			if (err != nil) != tt.wantErr {
				t.Fatalf("handshake error = %v, want error %v", err, tt.wantErr)
			}
		})
	}

	// The intermediate dies with the earlier of the two CAs, and the chain
	// still reads as the leaf's.
	c, err := parseCert(cross)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := parseCert(oldCA)
	if !c.NotAfter.Equal(o.NotAfter) || !c.IsCA {
		t.Errorf("cross-signed CA: NotAfter %v (old CA %v), IsCA %v", c.NotAfter, o.NotAfter, c.IsCA)
	}
	if got, _ := NotAfter(chain); !got.Equal(serving.NotAfter) {
		t.Errorf("NotAfter of the chain = %v, want the leaf's %v", got, serving.NotAfter)
	}
}

// TestIssueClient: a client certificate names the user and its groups,
// verifies as a client certificate against its CA, ECDSA or RSA (as
// sharded-test-server's client CA is), and never outlives the CA.
func TestIssueClient(t *testing.T) {
	ecCert, ecKey, err := NewCA("ec-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rsa-ca"}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &rsaKey.PublicKey, rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	rsaKeyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	for name, ca := range map[string][2][]byte{"ecdsa": {ecCert, ecKey}, "rsa": {rsaCert, rsaKeyPEM}} {
		t.Run(name, func(t *testing.T) {
			certPEM, keyPEM, err := IssueClient(ca[0], ca[1], "alice", []string{"team-a", "system:masters"}, 24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
				t.Fatalf("certificate and key do not match: %v", err)
			}
			c, err := parseCert(certPEM)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject.CommonName != "alice" || strings.Join(c.Subject.Organization, ",") != "team-a,system:masters" {
				t.Errorf("subject %v, want CN alice with both groups", c.Subject)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(ca[0])
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("does not verify as a client certificate: %v", err)
			}
			caCert, _ := parseCert(ca[0])
			if c.NotAfter.After(caCert.NotAfter) {
				t.Errorf("outlives its CA: %s after %s", c.NotAfter, caCert.NotAfter)
			}
		})
	}
	if _, _, err := IssueClient([]byte("no pem"), ecKey, "alice", nil, time.Hour); err == nil {
		t.Error("issued with a CA that is not PEM")
	}
}
