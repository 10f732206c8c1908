package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestLeaderElection runs two controller replicas with leader election:
// exactly one leads, and when it stops the other takes over and rules keep
// becoming Ready.
func TestLeaderElection(t *testing.T) {
	ctx, e := integration(t, 10*time.Minute, env.TwoShards)
	top := setupTopology(ctx, t, e)
	// The lease lives in the dep-ctrl workspace's default namespace.
	apply(ctx, t, top.admin(t, top.DepCtrl.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n")
	rt := runtimetest.Start(ctx, t, e, top.DepCtrl.Path)
	rt.StopController(t)

	replica := func(name string) (stop func(), leads func() bool) {
		ports, err := env.FreePorts(2)
		check.Must(t, err)
		p, logFile := rt.StartControllerReplica(t, name, "--leader-elect",
			"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[0]),
			"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]))
		return func() { check.Must(t, p.Stop(10*time.Second)) }, func() bool {
			data, _ := os.ReadFile(logFile)
			return strings.Contains(strings.ToLower(string(data)), "successfully acquired lease")
		}
	}
	stopA, leadsA := replica("controller-a")
	stopB, leadsB := replica("controller-b")

	top.protectVPCs(ctx, t)
	// Give a second replica every chance to grab the lease too.
	time.Sleep(5 * time.Second)
	if leadsA() == leadsB() {
		t.Fatalf("want exactly one leader; controller-a leads=%v, controller-b leads=%v", leadsA(), leadsB())
	}

	stopLeader, followerLeads := stopA, leadsB
	if leadsB() {
		stopLeader, followerLeads = stopB, leadsA
	}
	stopLeader()
	took := time.Now()
	top.createRule(ctx, t, top.Compute, ruleObject("db-needs-firewall", fixtures.ManagedDBs, fixtures.FirewallRules, top.Network.Path, ".spec.firewall"))
	top.waitReady(ctx, t, top.Compute, "db-needs-firewall")
	if !followerLeads() {
		t.Fatal("the rule became Ready but the remaining replica never acquired the lease")
	}
	// waitReady waits at most a minute: the failover bound this test holds.
	t.Logf("after the leader stopped, the other replica made a new rule Ready in %s (bound 1m0s)", time.Since(took).Round(time.Millisecond))
}
