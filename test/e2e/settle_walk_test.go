package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/decision"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// walkedWithin bounds how long after its stamp is published an object no
// request showed the webhook may wait to be settled: the two
// minutes, which the benchmarks measure, plus room for a loaded machine.
const walkedWithin = 4 * time.Minute

// TestEveryObjectSettles: on the real two-shard kcp, protected objects that
// no request showed the webhook are settled all the same, found by its walk
// of the workspaces, in namespaces where nothing else happens: VPCs created
// before their rule existed (no webhook saw their creation), on both
// shards; and a VPC whose label was removed, after the webhook restarted
// and so knows nothing of where it is. The walks never label a workspace's
// own objects of the protected type's group and resource.
func TestEveryObjectSettles(t *testing.T) {
	ctx, e := integration(t, 15*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String(), "--settle-walk-rate", strconv.Itoa(decision.DefaultWalkRate))

	const ns = "quiet"
	for _, c := range top.Consumers {
		apply(ctx, t, top.admin(t, c.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
		_, err := top.dynamicFor(t, c.Path).Resource(fixtures.VPCs.GVR()).Namespace(ns).Create(ctx, vpcObject("there-first"), metav1.CreateOptions{})
		check.Must(t, err)
	}
	// A tenant's own VPC type, which no rule protects, with an object.
	own, err := e.CreateWorkspace(ctx, "root", env.UniqueName("e2e-own-vpcs"), env.OnShard(top.Consumers[1].Shard))
	check.Must(t, err)
	apply(ctx, t, top.admin(t, own.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n", ownVPCs)
	top.waitServed(ctx, t, own, fixtures.VPCs.GVR())
	ownVPC := top.dynamicFor(t, own.Path).Resource(fixtures.VPCs.GVR()).Namespace(ns)
	check.Eventually(ctx, t, time.Minute, "creating the tenant's own VPC", func() error {
		_, err := ownVPC.Create(ctx, vpcObject("own"), metav1.CreateOptions{})
		return err
	})
	top.protectVPCs(ctx, t)
	published := top.waitPublished(ctx, t)

	t.Run("objects there before their rule", func(t *testing.T) {
		for _, c := range top.Consumers {
			took := top.waitSettledIn(ctx, t, c, ns, "there-first", published)
			t.Logf("shard %s: settled %s after the stamp was published", c.Shard, took.Round(time.Second))
		}
	})

	t.Run("an object the restarted webhook never heard of", func(t *testing.T) {
		c := top.Consumers[1]
		vpcs := top.dynamicFor(t, c.Path).Resource(fixtures.VPCs.GVR()).Namespace(ns)
		_, err := vpcs.Create(ctx, vpcObject("unlabelled"), metav1.CreateOptions{})
		check.Must(t, err)
		top.waitSettledIn(ctx, t, c, ns, "unlabelled", published)
		// Anyone may remove the label; an update is no create or
		// deletion, so it shows the webhook no place to sweep.
		_, err = vpcs.Patch(ctx, "unlabelled", types.MergePatchType, []byte(`{"metadata":{"labels":{"`+settle.SettledLabel+`":null}}}`), metav1.PatchOptions{})
		check.Must(t, err)
		rt.StopWebhook(t)
		restarted := time.Now()
		rt.StartWebhook(ctx, t)
		took := top.waitSettledIn(ctx, t, c, ns, "unlabelled", restarted)
		t.Logf("settled %s after the webhook restarted", took.Round(time.Second))
	})

	t.Run("a workspace's own type of the same name is never labelled", func(t *testing.T) {
		// Two walks have reached its workspace by now, each followed by
		// sweeps as long as the ones that settled the VPCs above.
		u, err := ownVPC.Get(ctx, "own", metav1.GetOptions{})
		check.Must(t, err)
		if l, ok := u.GetLabels()[settle.SettledLabel]; ok {
			t.Fatalf("the tenant's own VPC was labelled %q", l)
		}
	})
}

// ownVPCs is a tenant's own, namespaced VPC type, of the same group and
// resource as the bound one.
var ownVPCs = ownTypeCRD(fixtures.VPCs, "Namespaced")

// waitPublished waits for the VPCs' stamp to be published and returns when
// it was seen.
func (top *Topology) waitPublished(ctx context.Context, t *testing.T) time.Time {
	t.Helper()
	check.Eventually(ctx, t, 2*time.Minute, "the VPCs' stamp published", func() error {
		if top.publishedStamp(ctx, t, fixtures.VPCs) == "" {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	return time.Now()
}

// waitSettledIn waits until the VPC called name in namespace ns of c is
// settled under the published stamp, and returns how long after since.
func (top *Topology) waitSettledIn(ctx context.Context, t *testing.T, c env.Workspace, ns, name string, since time.Time) time.Duration {
	t.Helper()
	vpcs := top.dynamicFor(t, c.Path).Resource(fixtures.VPCs.GVR()).Namespace(ns)
	check.Eventually(ctx, t, walkedWithin, "VPC "+ns+"/"+name+" in "+c.Path+" settled", func() error {
		u, err := vpcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		stamp := top.publishedStamp(ctx, t, fixtures.VPCs)
		if l := u.GetLabels()[settle.SettledLabel]; stamp == "" || l != stamp {
			return fmt.Errorf("label %q, published %q", l, stamp)
		}
		return nil
	})
	return time.Since(since)
}
