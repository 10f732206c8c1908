package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// Bounds the faults test holds the runtime to. They are generous for a
// loaded two-core CI machine; the measured times are logged.
const (
	webhookRecoveryBound = 10 * time.Second
	convergenceBound     = 45 * time.Second
)

// TestFaults kills, restarts and disturbs the runtime's processes and
// objects, and checks that nothing referenced is deleted meanwhile and that
// everything converges within a stated bound, which it measures.
func TestFaults(t *testing.T) {
	ctx, e := integration(t, 15*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	top.protectVPCs(ctx, t)
	consumer := top.Consumers[len(top.Consumers)-1]
	top.vpcInUse(ctx, t, consumer)

	// enforced waits until the referenced VPC is refused with the
	// webhook's own message and an unreferenced one can be deleted, and
	// returns how long that took.
	enforced := func(t *testing.T, what string, bound time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		name := fmt.Sprintf("free-%d", start.UnixNano())
		top.object(ctx, t, consumer, fixtures.VPCs, name, map[string]interface{}{}, nil)
		check.Eventually(ctx, t, bound, what, func() error {
			if err := top.decidedDenial(ctx, t, consumer, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1"); err != nil {
				return err
			}
			if top.exists(ctx, t, consumer, fixtures.VPCs, name) {
				if err := top.remove(ctx, t, consumer, fixtures.VPCs, name); err != nil {
					return fmt.Errorf("an unreferenced VPC is not deletable yet: %v", err)
				}
			}
			return nil
		})
		took := time.Since(start)
		t.Logf("%s: %s (bound %s)", what, took.Round(time.Millisecond), bound)
		return took
	}

	t.Run("webhook down: protected deletes fail closed, others go on", func(t *testing.T) {
		rt.StopWebhook(t)
		restarted := false
		defer func() {
			if !restarted {
				rt.StartWebhook(ctx, t)
			}
		}()
		for range 3 {
			err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-1")
			if err == nil {
				t.Fatal("vpc-1 was deleted while the webhook was down")
			}
			if !strings.Contains(err.Error(), "deletion-protection") {
				t.Fatalf("the refusal does not say that deletion protection is unavailable: %v", err)
			}
		}
		// Writes of dependents fail closed too: the reference index must
		// see every one of them.
		vm := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
			"metadata": map[string]interface{}{"name": "vm-while-down"}, "spec": ref("vpc-1"),
		}}
		_, err := top.objects(t, consumer, fixtures.VirtualMachines).Create(ctx, vm, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "reference-index") {
			t.Fatalf("creating a dependent while the webhook is down: want a refusal naming the reference index, got %v", err)
		}
		// A type no rule involves is not affected.
		top.object(ctx, t, consumer, fixtures.FirewallRules, "fw-unprotected", map[string]interface{}{}, nil)
		top.expectDeleted(ctx, t, consumer, fixtures.FirewallRules, "fw-unprotected")

		// Ready only with a complete registry: at the first 200 from
		// /readyz, the registry holds the rule.
		restarted = true
		rt.StartWebhookNoWait(t)
		start := time.Now()
		check.Eventually(ctx, t, time.Minute, "the restarted webhook to report ready", func() error {
			if code := httpStatus(ctx, rt.WebhookReadyzURL); code != http.StatusOK {
				return fmt.Errorf("readyz: %d", code)
			}
			return nil
		})
		if got := metricValue(ctx, t, rt.WebhookMetricsURL, "depctrl_webhook_rules_registered"); got != "1" {
			t.Fatalf("the webhook reported ready with %q rules registered, want 1", got)
		}
		t.Logf("restarted webhook ready after %s", time.Since(start).Round(time.Millisecond))
		enforced(t, "enforcement after the webhook restarted", webhookRecoveryBound)
	})

	t.Run("controller down during a rule change", func(t *testing.T) {
		rt.StopController(t)
		// Whatever happens below, the later steps need a controller.
		restarted := false
		defer func() {
			if !restarted {
				rt.StartController(t)
			}
		}()
		// The webhook follows rules itself: an edit takes effect with the
		// controller down.
		editRulePath(ctx, t, top, "vm-needs-vpc", ".spec.networks[*].vpc")
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-2", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-2", map[string]interface{}{"networks": []interface{}{map[string]interface{}{"vpc": "vpc-2"}}}, nil)
		// Until the webhook has seen the edit it enforces the old path, under
		// which vm-2 references nothing: a delete then is allowed, and the
		// probe is recreated. Once refused, it must stay refused.
		edited := time.Now()
		check.Eventually(ctx, t, convergenceBound, "the edited path to be enforced with the controller down", func() error {
			err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-2")
			if err == nil {
				top.object(ctx, t, consumer, fixtures.VPCs, "vpc-2", map[string]interface{}{}, nil)
				return fmt.Errorf("vpc-2 deletable: the webhook does not know the edited path yet")
			}
			if !strings.Contains(err.Error(), "still referenced by VirtualMachine/vm-2") {
				return err
			}
			return nil
		})
		t.Logf("edited path enforced with the controller down after %s", time.Since(edited).Round(time.Millisecond))
		for range 3 {
			if err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-2"); err == nil {
				t.Fatal("vpc-2 was deleted while vm-2 references it under the enforced, edited rule")
			}
		}
		start := time.Now()
		restarted = true
		rt.StartController(t)
		took := top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
		t.Logf("controller restarted: rule Ready again after %s (bound %s)", took.Round(time.Millisecond), convergenceBound)
		if time.Since(start) > convergenceBound {
			t.Errorf("convergence took %s, more than %s", time.Since(start), convergenceBound)
		}
		top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-2")
		top.expectDeleted(ctx, t, consumer, fixtures.VPCs, "vpc-2")
		// Back to the original path for the next steps.
		editRulePath(ctx, t, top, "vm-needs-vpc", ".spec.vpcRef.name")
		top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
	})

	t.Run("webhook configuration deleted or edited by hand", func(t *testing.T) {
		network := top.dynamicFor(t, top.Network.Path).Resource(webhookGVR)
		// Edited: the failure policy weakened to Ignore.
		_, err := network.Patch(ctx, v1alpha1.WebhookConfigurationName, types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]`), metav1.PatchOptions{})
		check.Must(t, err)
		start := time.Now()
		check.Eventually(ctx, t, convergenceBound, "the edited configuration to be restored", func() error {
			u := top.webhookConfiguration(ctx, t, top.Network)
			if u == nil {
				return fmt.Errorf("configuration missing")
			}
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			if len(hooks) == 0 || hooks[0].(map[string]interface{})["failurePolicy"] != "Fail" {
				return fmt.Errorf("failurePolicy still weakened")
			}
			return nil
		})
		t.Logf("hand-edited configuration restored after %s (bound %s)", time.Since(start).Round(time.Millisecond), convergenceBound)

		check.Must(t, network.Delete(ctx, v1alpha1.WebhookConfigurationName, metav1.DeleteOptions{}))
		start = time.Now()
		check.Eventually(ctx, t, convergenceBound, "the deleted configuration to be recreated", func() error {
			if top.webhookConfiguration(ctx, t, top.Network) == nil {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		t.Logf("deleted configuration recreated after %s (bound %s)", time.Since(start).Round(time.Millisecond), convergenceBound)
		enforced(t, "enforcement after the configuration was recreated", convergenceBound)
	})

	var rotated *certs.Bundle
	t.Run("CA and serving certificate rotated", func(t *testing.T) {
		bundle, err := certs.Issue("depctrl-webhook", []string{"127.0.0.1", "localhost"}, 24*time.Hour)
		check.Must(t, err)
		rotated = bundle
		start := time.Now()
		// The controller reads the CA file, the webhook its certificate
		// directory; both reload without a restart.
		check.Must(t, writeAtomic(rt.CAFile, bundle.CACert))
		check.Must(t, writeAtomic(filepath.Join(rt.CertDir, "tls.crt"), bundle.ServerCert))
		check.Must(t, writeAtomic(filepath.Join(rt.CertDir, "tls.key"), bundle.ServerKey))
		check.Eventually(ctx, t, convergenceBound, "the new CA in the webhook configuration", func() error {
			u := top.webhookConfiguration(ctx, t, top.Network)
			if u == nil {
				return fmt.Errorf("configuration missing")
			}
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			ca, _, _ := unstructured.NestedString(hooks[0].(map[string]interface{}), "clientConfig", "caBundle")
			if ca != base64.StdEncoding.EncodeToString(bundle.CACert) {
				return fmt.Errorf("old CA still configured")
			}
			return nil
		})
		enforced(t, "enforcement after the CA and certificate rotated", convergenceBound)
		t.Logf("rotation converged after %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("certificate from a new CA served before kcp has that CA", func(t *testing.T) {
		if rotated == nil {
			t.Skip("needs the CA of the previous step")
		}
		// What depctrl_runtime does when it replaces the CA: the new
		// serving certificate comes with the new CA cross-signed by the old
		// one, so the webhook may switch before the controller has written
		// the new CA into the configurations. Here it never does: the CA
		// file is left as it was.
		newCA, newKey, err := certs.NewCA("depctrl-webhook-ca-2", 24*time.Hour)
		check.Must(t, err)
		serving, err := certs.IssueServing(newCA, newKey, "depctrl-webhook", []string{"127.0.0.1", "localhost"}, 24*time.Hour)
		check.Must(t, err)
		cross, err := certs.CrossSign(newCA, rotated.CACert, rotated.CAKey)
		check.Must(t, err)
		leaf, _ := pem.Decode(serving.ServerCert)
		// A new process, as a rollout starts new pods: kcp's connections
		// to the old one, verified before, are gone, and every call
		// handshakes with the new certificate.
		rt.StopWebhook(t)
		check.Must(t, writeAtomic(filepath.Join(rt.CertDir, "tls.crt"), append(append([]byte{}, serving.ServerCert...), cross...)))
		check.Must(t, writeAtomic(filepath.Join(rt.CertDir, "tls.key"), serving.ServerKey))
		rt.StartWebhook(ctx, t)
		check.Eventually(ctx, t, convergenceBound, "the webhook to serve the new certificate", func() error {
			u, err := url.Parse(rt.WebhookURL)
			if err != nil {
				return err
			}
			conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}) //nolint:gosec // only reads which certificate is served
			if err != nil {
				return err
			}
			defer func() { _ = conn.Close() }()
			if !bytes.Equal(conn.ConnectionState().PeerCertificates[0].Raw, leaf.Bytes) {
				return fmt.Errorf("still the old certificate")
			}
			return nil
		})
		// kcp's first call may still meet a connection to the stopped
		// process; a certificate kcp does not trust fails at once.
		check.Eventually(ctx, t, convergenceBound, "kcp to reach the restarted webhook", func() error {
			err := top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-1")
			switch {
			case err == nil:
				t.Fatal("vpc-1 was deleted while vm-1 references it")
			case strings.Contains(err.Error(), "x509") || strings.Contains(err.Error(), "certificate"):
				t.Fatalf("kcp does not trust the cross-signed certificate: %v", err)
			case !strings.Contains(err.Error(), "still referenced by VirtualMachine/vm-1"):
				return fmt.Errorf("not yet decided by the webhook: %v", err)
			}
			return nil
		})
		name := fmt.Sprintf("free-%d", time.Now().UnixNano())
		top.object(ctx, t, consumer, fixtures.VPCs, name, map[string]interface{}{}, nil)
		if err := top.remove(ctx, t, consumer, fixtures.VPCs, name); err != nil {
			t.Fatalf("deleting an unreferenced VPC with the cross-signed certificate: %v", err)
		}
		// Creating a dependent passes through the reference index.
		vm := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": fixtures.VirtualMachines.Group + "/v1", "kind": fixtures.VirtualMachines.Kind,
			"metadata": map[string]interface{}{"name": name}, "spec": ref(name),
		}}
		if _, err := top.objects(t, consumer, fixtures.VirtualMachines).Create(ctx, vm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating a VM with the cross-signed certificate: %v", err)
		}
		// Then the controller gets the new CA too, as the next apply's
		// bundle would have it; the rest of the test runs on it.
		check.Must(t, writeAtomic(rt.CAFile, append(append([]byte{}, newCA...), rotated.CACert...)))
		enforced(t, "enforcement after the new CA reached the configurations", convergenceBound)
	})

	t.Run("rule deleted while the controller is down", func(t *testing.T) {
		rt.StopController(t)
		top.deleteRule(ctx, t, top.Compute, "vm-needs-vpc")
		// The webhook drops the rule itself: the delete goes through
		// without the controller.
		start := time.Now()
		check.Eventually(ctx, t, convergenceBound, "vpc-1 to be deletable once its rule is gone", func() error {
			return top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-1")
		})
		t.Logf("rule deleted: protection lifted by the webhook after %s", time.Since(start).Round(time.Millisecond))
		start = time.Now()
		rt.StartController(t)
		check.Eventually(ctx, t, convergenceBound, "the controller to remove the configuration no rule needs", func() error {
			if top.webhookConfiguration(ctx, t, top.Network) != nil && len(top.protectedResources(ctx, t, top.Network)) > 0 {
				return fmt.Errorf("configuration still protects %v", top.protectedResources(ctx, t, top.Network))
			}
			return nil
		})
		t.Logf("restarted controller removed the stale configuration after %s (bound %s)", time.Since(start).Round(time.Millisecond), convergenceBound)
	})
}

func httpStatus(ctx context.Context, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// metricValue reads one unlabelled metric from a Prometheus endpoint.
func metricValue(ctx context.Context, t *testing.T, url, name string) string {
	t.Helper()
	for _, line := range metricLines(ctx, t, url) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// metricLines reads a Prometheus endpoint, one line per element.
func metricLines(ctx context.Context, t *testing.T, url string) []string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	check.Must(t, err)
	resp, err := http.DefaultClient.Do(req)
	check.Must(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	check.Must(t, err)
	return strings.Split(string(body), "\n")
}

// counterValue is metricValue for a counter, "0" before a labelled one has
// counted (it is not exported until then).
func counterValue(ctx context.Context, t *testing.T, url, name string) string {
	t.Helper()
	if v := metricValue(ctx, t, url, name); v != "" {
		return v
	}
	return "0"
}

// counter returns the current value of a counter at url, as a number.
func counter(ctx context.Context, t *testing.T, url string) func(name string) float64 {
	return func(name string) float64 {
		t.Helper()
		f, err := strconv.ParseFloat(counterValue(ctx, t, url, name), 64)
		check.Must(t, err)
		return f
	}
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
