package provider

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
)

func TestPlanRenewal(t *testing.T) {
	hosts := []string{"depctrl-webhook.depctrl-system.svc", "127.0.0.1"}
	slices.Sort(hosts)
	now := time.Now()
	fresh, err := renewal{serving: true, ca: true}.issue(nil, "depctrl-webhook", hosts, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	imported := *fresh
	imported.CAKey = ""
	tests := []struct {
		name        string
		prior       *tlsMaterial
		hosts       []string
		renewBefore time.Duration
		at          time.Time
		want        renewal
	}{
		{"nothing yet", nil, hosts, 30 * time.Minute, now, renewal{serving: true, ca: true}},
		{"fresh", fresh, hosts, 30 * time.Minute, now, renewal{}},
		{"near expiry", fresh, hosts, 30 * time.Minute, now.Add(40 * time.Minute), renewal{serving: true}},
		{"new host", fresh, append([]string{"extra.example.com"}, hosts...), 30 * time.Minute, now, renewal{serving: true}},
		{"CA too close to expiry", fresh, hosts, 30 * time.Minute, now.Add(9*time.Hour + 30*time.Minute), renewal{serving: true, ca: true}},
		{"imported, still fresh", &imported, hosts, 30 * time.Minute, now, renewal{}},
		{"imported, near expiry: no CA key", &imported, hosts, 30 * time.Minute, now.Add(40 * time.Minute), renewal{serving: true, ca: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := slices.Clone(tt.hosts)
			slices.Sort(h)
			if got := planRenewal(tt.prior, h, time.Hour, tt.renewBefore, tt.at); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRenewalKeepsTrust: renewing the serving certificate keeps the CA; a
// new CA is bundled with the old one so pods still serving the old
// certificate stay trusted during the rollout.
func TestRenewalKeepsTrust(t *testing.T) {
	hosts := []string{"a.example.com"}
	now := time.Now()
	first, err := renewal{serving: true, ca: true}.issue(nil, "w", hosts, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	second, err := renewal{serving: true}.issue(first, "w", hosts, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if second.CABundle != first.CABundle || second.Cert == first.Cert {
		t.Error("a serving renewal must keep the CA bundle and change the certificate")
	}
	third, err := renewal{serving: true, ca: true}.issue(second, "w", hosts, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if third.CACert == second.CACert {
		t.Fatal("a CA renewal must create a new CA")
	}
	if third.CABundle != third.CACert+second.CACert {
		t.Errorf("the bundle after a CA renewal must hold the new and the previous CA, got\n%s", third.CABundle)
	}
	got, _ := certs.Hosts([]byte(third.Cert))
	if !slices.Equal(got, hosts) {
		t.Errorf("hosts %v", got)
	}
	// kcp may call a new pod before the controller has written the new
	// bundle: the new certificate must verify with the previous CA alone.
	for name, roots := range map[string]string{"the previous CA": second.CACert, "the new CA": third.CACert, "the new bundle": third.CABundle} {
		if err := verifyChain(third.Cert, roots, hosts[0]); err != nil {
			t.Errorf("the certificate after a CA renewal does not verify with %s: %v", name, err)
		}
	}
	// Without the previous CA's key (imported) there is no cross-signature:
	// only the new bundle verifies it.
	imported := *second
	imported.CAKey = ""
	fourth, err := renewal{serving: true, ca: true}.issue(&imported, "w", hosts, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if verifyChain(fourth.Cert, second.CACert, hosts[0]) == nil {
		t.Error("a certificate from a new CA verified with the previous CA without a cross-signature")
	}
	if err := verifyChain(fourth.Cert, fourth.CABundle, hosts[0]); err != nil {
		t.Errorf("the certificate after an imported CA renewal does not verify with its bundle: %v", err)
	}
}

// verifyChain verifies a PEM chain (leaf first) for host against rootsPEM,
// as a TLS client given the chain would.
func verifyChain(chainPEM, rootsPEM, host string) error {
	var chain []*x509.Certificate
	rest := []byte(chainPEM)
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return err
		}
		chain = append(chain, c)
	}
	if len(chain) == 0 {
		return fmt.Errorf("no certificate")
	}
	roots, intermediates := x509.NewCertPool(), x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(rootsPEM)) {
		return fmt.Errorf("no roots")
	}
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: intermediates})
	return err
}

func TestContains(t *testing.T) {
	applied := map[string]interface{}{
		"spec": map[string]interface{}{
			"replicas": int64(2),
			"template": map[string]interface{}{"spec": map[string]interface{}{
				"automountServiceAccountToken": false,
				"containers":                   []interface{}{map[string]interface{}{"name": "c", "args": []interface{}{"--a"}}},
			}},
		},
	}
	tests := []struct {
		name string
		live map[string]interface{}
		want bool
	}{
		{"equal, with server defaults", map[string]interface{}{
			"status": map[string]interface{}{"replicas": int64(2)},
			"spec": map[string]interface{}{
				"replicas": float64(2), "progressDeadlineSeconds": int64(600),
				"template": map[string]interface{}{"spec": map[string]interface{}{
					"automountServiceAccountToken": false, "dnsPolicy": "ClusterFirst",
					"containers": []interface{}{map[string]interface{}{"name": "c", "args": []interface{}{"--a"}, "terminationMessagePath": "/dev/termination-log"}},
				}},
			},
		}, true},
		{"scaled by hand", map[string]interface{}{"spec": map[string]interface{}{
			"replicas": int64(0),
			"template": map[string]interface{}{"spec": map[string]interface{}{
				"containers": []interface{}{map[string]interface{}{"name": "c", "args": []interface{}{"--a"}}},
			}},
		}}, false},
		{"argument added by hand", map[string]interface{}{"spec": map[string]interface{}{
			"replicas": int64(2),
			"template": map[string]interface{}{"spec": map[string]interface{}{
				"containers": []interface{}{map[string]interface{}{"name": "c", "args": []interface{}{"--a", "--b"}}},
			}},
		}}, false},
		{"gone", map[string]interface{}{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := contains(tt.live, applied); got != tt.want {
				t.Errorf("contains = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]interface{}{"name": "s"},
		"data": map[string]interface{}{"tls.key": base64.StdEncoding.EncodeToString([]byte("-----BEGIN EC PRIVATE KEY-----"))},
	}}
	once := redact(secret)
	if strings.Contains(fmt.Sprint(once.Object), "LS0t") {
		t.Fatalf("redacted Secret still holds the key: %v", once.Object)
	}
	if twice := redact(once); !reflect.DeepEqual(twice.Object, once.Object) {
		t.Errorf("redact is not idempotent:\n%v\n%v", once.Object, twice.Object)
	}
	if !contains(redact(secret).Object, once.Object) {
		t.Error("a live Secret with the applied content does not match its redacted record")
	}
	changed := secret.DeepCopy()
	changed.Object["data"] = map[string]interface{}{"tls.key": base64.StdEncoding.EncodeToString([]byte("other"))}
	if contains(redact(changed).Object, once.Object) {
		t.Error("a changed Secret matches the record of the old content")
	}
	if fingerprint(secret) != fingerprint(once) {
		t.Error("the fingerprint of an object and of its record differ")
	}
}
