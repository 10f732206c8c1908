// Package certs issues the webhook's serving certificate and the CA that
// kcp uses to verify it. The Terraform provider issues them when it deploys
// the runtime, and tests issue them for webhooks on loopback, and client
// certificates for the identities they run as.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Bundle is a CA and a serving certificate signed by it, all PEM encoded.
type Bundle struct {
	CACert     []byte
	CAKey      []byte
	ServerCert []byte
	ServerKey  []byte
	// NotAfter is when the serving certificate expires.
	NotAfter time.Time
}

// Issue creates a CA and a serving certificate for hosts (DNS names or IP
// addresses), both valid for validity from now.
func Issue(commonName string, hosts []string, validity time.Duration) (*Bundle, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("a serving certificate needs at least one host name or IP address")
	}
	caCert, caKey, err := NewCA(commonName+"-ca", validity)
	if err != nil {
		return nil, err
	}
	return IssueServing(caCert, caKey, commonName, hosts, validity)
}

// NewCA creates a self-signed CA valid for validity from now and returns its
// certificate and key in PEM.
func NewCA(commonName string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	// Certificates carry whole seconds; so does NotAfter.
	now := time.Now().Truncate(time.Second)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("self-signing CA: %w", err)
	}
	keyPEM, err = encodeKey(caKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), keyPEM, nil
}

// IssueServing signs a new serving certificate for hosts with an existing
// CA. Renewing only the serving certificate keeps the CA that kcp already
// trusts, so a renewal never makes kcp refuse the webhook. The serving
// certificate never outlives its CA.
func IssueServing(caCertPEM, caKeyPEM []byte, commonName string, hosts []string, validity time.Duration) (*Bundle, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("a serving certificate needs at least one host name or IP address")
	}
	caCert, caKey, err := loadCA(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, err
	}
	now := time.Now().Truncate(time.Second)
	notAfter := before(now.Add(validity), caCert)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing serving certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Bundle{
		CACert:     caCertPEM,
		CAKey:      caKeyPEM,
		ServerCert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ServerKey:  keyPEM,
		NotAfter:   tmpl.NotAfter.UTC(),
	}, nil
}

// IssueClient signs a client certificate for user with the CA caCertPEM
// and caKeyPEM (ECDSA or RSA, as PEM). kcp and the Kubernetes API server
// authenticate its common name as the user and its organizations as the
// groups. It never outlives its CA. It returns the certificate and a new
// key in PEM.
func IssueClient(caCertPEM, caKeyPEM []byte, user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	caCert, caKey, err := loadCA(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now().Truncate(time.Second)
	notAfter := before(now.Add(validity), caCert)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating the key of %q: %w", user, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the client certificate of %q: %w", user, err)
	}
	if keyPEM, err = encodeKey(key); err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// CrossSign re-issues the CA newCAPEM (same subject, same key) signed by the
// CA oldCAPEM with oldKeyPEM. A serving certificate from the new CA sent
// together with this intermediate verifies for a client that trusts only
// the old CA, as well as for one that trusts the new: so a webhook can
// switch to a certificate from a new CA before every client has been given
// the new CA. It expires with whichever of the two CAs expires first.
func CrossSign(newCAPEM, oldCAPEM, oldKeyPEM []byte) ([]byte, error) {
	newCA, err := parseCert(newCAPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the new CA: %w", err)
	}
	oldCA, err := parseCert(oldCAPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the previous CA: %w", err)
	}
	oldKey, err := parseKey(oldKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("reading the previous CA's key: %w", err)
	}
	notAfter := newCA.NotAfter
	if oldCA.NotAfter.Before(notAfter) {
		notAfter = oldCA.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      newCA.Subject,
		// Chains are built by subject and key identifier: both must be the
		// new CA's, so that what the new CA signed names this as its issuer.
		SubjectKeyId:          newCA.SubjectKeyId,
		NotBefore:             newCA.NotBefore,
		NotAfter:              notAfter,
		KeyUsage:              newCA.KeyUsage,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, oldCA, newCA.PublicKey, oldKey)
	if err != nil {
		return nil, fmt.Errorf("cross-signing the new CA: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Hosts returns the DNS names and IP addresses the first certificate in
// certPEM is valid for.
func Hosts(certPEM []byte) ([]string, error) {
	c, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	hosts := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	return hosts, nil
}

// NotAfter returns the expiry of the first certificate in certPEM.
func NotAfter(certPEM []byte) (time.Time, error) {
	c, err := parseCert(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	return c.NotAfter, nil
}

// loadCA reads a CA's certificate and key.
func loadCA(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA certificate: %w", err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA key: %w", err)
	}
	return cert, key, nil
}

// before is t, or ca's expiry if that comes first: no certificate outlives
// its CA.
func before(t time.Time, ca *x509.Certificate) time.Time {
	if t.After(ca.NotAfter) {
		return ca.NotAfter
	}
	return t
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no PEM certificate found")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	return c, nil
}

func parseKey(keyPEM []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, fmt.Errorf("no PEM key found")
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", k)
	}
	return signer, nil
}

func encodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
