package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestProcessesGuide runs the runtime exactly as the guide "Running the
// runtime as processes" says: examples/processes/run.sh, once per
// component, with its settings in the environment and nothing else. The
// rule becomes Ready and a referenced VPC cannot be deleted. The dep-ctrl
// workspace is nested below a parent of its own on which nothing is
// granted (root:<prefix>-platform:deps): the webhook has grants in it and
// on the shards alone, the controller also reads workspaces in root and
// <org> to resolve root:<org>:network, as in every topology.
func TestProcessesGuide(t *testing.T) {
	ctx, e := integration(t, 8*time.Minute, env.TwoShards)
	top := setupTopology(ctx, t, e, nestedDepCtrl())
	root, err := env.RepoRoot()
	check.Must(t, err)
	script := filepath.Join(root, "examples", "processes", "run.sh")

	dir := t.TempDir()
	bundle, err := certs.Issue("depctrl-webhook", []string{"127.0.0.1"}, time.Hour)
	check.Must(t, err)
	tlsDir := filepath.Join(dir, "tls")
	check.Must(t, os.MkdirAll(tlsDir, 0o700))
	for name, data := range map[string][]byte{"tls.crt": bundle.ServerCert, "tls.key": bundle.ServerKey, "ca.crt": bundle.CACert} {
		check.Must(t, os.WriteFile(filepath.Join(tlsDir, name), data, 0o600))
	}
	kubeconfig := func(user string) string {
		id, err := e.Identity(user)
		check.Must(t, err)
		data, err := e.IdentityKubeconfig(id, top.DepCtrl.Path)
		check.Must(t, err)
		p := filepath.Join(dir, user+".kubeconfig")
		check.Must(t, os.WriteFile(p, data, 0o600))
		return p
	}
	ports, err := env.FreePorts(5)
	check.Must(t, err)
	settings := []string{
		"DEPCTRL_BIN_DIR=" + runtimetest.Binaries(t),
		"DEPCTRL_WEBHOOK_KUBECONFIG=" + kubeconfig(env.WebhookUser),
		"DEPCTRL_CONTROLLER_KUBECONFIG=" + kubeconfig(env.ControllerUser),
		"DEPCTRL_TLS_DIR=" + tlsDir,
		"DEPCTRL_CA_FILE=" + filepath.Join(tlsDir, "ca.crt"),
		fmt.Sprintf("DEPCTRL_WEBHOOK_URL=https://127.0.0.1:%d/validate", ports[0]),
		fmt.Sprintf("DEPCTRL_WEBHOOK_ADDR=127.0.0.1:%d", ports[0]),
		// The defaults (:8080 to :8083) could clash with other tests
		// running at the same time, so the test moves them, as the
		// settings allow.
		fmt.Sprintf("DEPCTRL_WEBHOOK_METRICS_ADDR=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("DEPCTRL_WEBHOOK_PROBE_ADDR=127.0.0.1:%d", ports[2]),
		fmt.Sprintf("DEPCTRL_CONTROLLER_METRICS_ADDR=127.0.0.1:%d", ports[3]),
		fmt.Sprintf("DEPCTRL_CONTROLLER_PROBE_ADDR=127.0.0.1:%d", ports[4]),
	}
	start := func(component string) {
		logFile := filepath.Join(dir, component+".log")
		p, err := env.StartProcess("run.sh "+component, script, []string{component}, dir, logFile, settings...)
		check.Must(t, err)
		t.Cleanup(func() {
			if err := p.Stop(10 * time.Second); err != nil {
				t.Errorf("stopping %s: %v", component, err)
			}
			if t.Failed() {
				data, _ := os.ReadFile(logFile)
				t.Logf("==> %s.log <==\n%s", component, runtimetest.Tail(string(data), 40))
			}
		})
	}
	start("webhook")
	check.Eventually(ctx, t, time.Minute, "the webhook to report ready", func() error {
		return runtimetest.Readyz(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2]))
	})
	start("controller")

	top.protectVPCs(ctx, t)
	c := top.Consumers[0]
	top.vpcInUse(ctx, t, c)
	top.expectDenied(ctx, t, c, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1")
	top.expectDeleted(ctx, t, c, fixtures.VirtualMachines, "vm-1")
	check.Eventually(ctx, t, 30*time.Second, "vpc-1 to be deletable once vm-1 is gone", func() error {
		return top.remove(ctx, t, c, fixtures.VPCs, "vpc-1")
	})
}
