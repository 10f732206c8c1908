package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
// and so knows nothing of where it is.
func TestEveryObjectSettles(t *testing.T) {
	ctx, e := integration(t, 15*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())

	const ns = "quiet"
	for _, c := range top.Consumers {
		apply(ctx, t, top.admin(t, c.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
		_, err := top.dynamicFor(t, c.Path).Resource(fixtures.VPCs.GVR()).Namespace(ns).Create(ctx, vpcObject("there-first"), metav1.CreateOptions{})
		check.Must(t, err)
	}
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
}

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
