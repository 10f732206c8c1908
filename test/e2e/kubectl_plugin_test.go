package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/internal/kubectlplugin"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// TestKubectlDepctrlWhy: on the real two-shard kcp, the kubectl-depctrl
// binary, pointed at a consumer workspace as kubectl ws would point it
// (the kubeconfig's server names the workspace), names the dependents that
// block a VPC's deletion on either shard, with their workspace and whether
// they are stored or being written, in a table and in JSON, and exits 1;
// once they are gone it says nothing blocks the deletion and exits 0,
// having deleted nothing; a type the workspace does not serve exits 2.
func TestKubectlDepctrlWhy(t *testing.T) {
	onEveryShardWithPlugin(t, func(t *testing.T, ctx context.Context, top *Topology, consumer env.Workspace, run pluginRun) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-why", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-why", ref("vpc-why"), nil)
		why := func(args ...string) (string, int) { return run(append([]string{"why"}, args...)...) }

		out, code := why("vpcs/vpc-why")
		if code != kubectlplugin.ExitBlocked || !strings.Contains(out, "vm-why") || !strings.Contains(out, consumer.Cluster) || !strings.Contains(out, "stored") {
			t.Fatalf("why vpcs/vpc-why: exit %d, want %d naming vm-why, stored, in %s:\n%s", code, kubectlplugin.ExitBlocked, consumer.Cluster, out)
		}
		t.Logf("kubectl depctrl why vpcs/vpc-why:\n%s", out)
		out, code = why("vpc", "vpc-why", "-o", "json")
		var v kubectlplugin.Verdict
		if code != kubectlplugin.ExitBlocked || json.Unmarshal([]byte(out), &v) != nil || v.Deletable || len(v.Blockers) != 1 ||
			v.Blockers[0].Name != "vm-why" || v.Blockers[0].Workspace != consumer.Cluster || v.Blockers[0].Pending {
			t.Fatalf("why -o json: exit %d, %+v:\n%s", code, v, out)
		}

		top.expectDeleted(ctx, t, consumer, fixtures.VirtualMachines, "vm-why")
		check.Eventually(ctx, t, time.Minute, "nothing to block the deletion", func() error {
			if out, code := why("vpcs/vpc-why"); code != kubectlplugin.ExitOK || !strings.Contains(out, "nothing blocks the deletion of vpcs/vpc-why") {
				return errors.New(out)
			}
			return nil
		})
		if !top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-why") {
			t.Fatal("why deleted the VPC")
		}
		if out, code := why("nosuchthings/x"); code != kubectlplugin.ExitError {
			t.Fatalf("why of a type the workspace does not serve: exit %d, want %d:\n%s", code, kubectlplugin.ExitError, out)
		}
	})
}

// pluginRun runs kubectl-depctrl, pointed at one consumer workspace and
// its namespace apps as the admin, with args; it returns the output (stdout,
// then stderr when it fails) and the exit code.
type pluginRun func(args ...string) (string, int)

// onEveryShardWithPlugin installs the two-shard topology with VPCs
// protected, builds kubectl-depctrl, and runs test in the consumer on each
// shard with a pluginRun pointed at it.
func onEveryShardWithPlugin(t *testing.T, test func(t *testing.T, ctx context.Context, top *Topology, consumer env.Workspace, run pluginRun)) {
	t.Helper()
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top, _ := install(ctx, t, e)
	top.protectVPCs(ctx, t)
	bin := pluginBinary(ctx, t)
	for _, consumer := range top.Consumers {
		t.Run("shard "+consumer.Shard, func(t *testing.T) {
			test(t, ctx, top, consumer, func(args ...string) (string, int) {
				return runPlugin(ctx, t, bin, append(args, "--kubeconfig", e.AdminKubeconfig, "--server", e.FrontProxyURL+"/clusters/"+consumer.Path, "-n", "apps")...)
			})
		})
	}
}

// pluginBinary builds kubectl-depctrl.
func pluginBinary(ctx context.Context, t *testing.T) string {
	t.Helper()
	return buildCommand(ctx, t, "kubectl-depctrl")
}

// buildCommand builds ./cmd/<name> into a directory of the test's and
// returns the binary's path.
func buildCommand(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	root, err := env.RepoRoot()
	check.Must(t, err)
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "./cmd/"+name)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return filepath.Join(dir, name)
}
