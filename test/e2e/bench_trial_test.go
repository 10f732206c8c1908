package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// deletes measures the admission benchmark's deletes in one consumer
// namespace, where VMs depend on VPCs and FirewallRules are protected by no
// rule, and "vpc-target" is referenced by the VM "zz-blocker".
type deletes struct {
	top        *Topology
	consumer   env.Workspace
	vms        dynamic.ResourceInterface
	vpcs       dynamic.ResourceInterface
	fws        dynamic.ResourceInterface
	metricsURL string
}

func newDeletes(top *Topology, consumer env.Workspace, d dynamic.Interface, metricsURL string) deletes {
	return deletes{top: top, consumer: consumer, metricsURL: metricsURL,
		vms:  d.Resource(fixtures.VirtualMachines.GVR()).Namespace("apps"),
		vpcs: d.Resource(fixtures.VPCs.GVR()).Namespace("apps"),
		fws:  d.Resource(fixtures.FirewallRules.GVR()).Namespace("apps"),
	}
}

// unthrottledDeletes measures deletes in top's first consumer through a
// client without client-go's rate limit, which it also returns: the
// benchmarks' bulk writes (creating and rewriting thousands of VMs) must
// measure the servers, not client-go's token bucket.
func unthrottledDeletes(t *testing.T, top *Topology, rt *runtimetest.Runtime) (deletes, dynamic.Interface) {
	t.Helper()
	consumer := top.Consumers[0]
	cfg := top.admin(t, consumer.Path)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	d, err := dynamic.NewForConfig(cfg)
	check.Must(t, err)
	return newDeletes(top, consumer, d, rt.WebhookMetricsURL), d
}

// trialResult is what one trial measured.
type trialResult struct {
	// floor is (a), allowed (b), again (b'), denied (c) and listed (d).
	floor, allowed, again, denied, listed time.Duration
	// inWebhook is the webhook's own time for (b), from its histogram; 0
	// when it recorded none.
	inWebhook time.Duration
	// read is the number of dependents the webhook read for (b).
	read float64
}

func (d deletes) metric(ctx context.Context, t *testing.T, name string) float64 {
	t.Helper()
	v, _ := strconv.ParseFloat(metricValue(ctx, t, d.metricsURL, name), 64)
	return v
}

// examined is how many dependents the webhook has read so far.
func (d deletes) examined(ctx context.Context, t *testing.T) float64 {
	t.Helper()
	return d.metric(ctx, t, "depctrl_webhook_dependents_examined_total")
}

// warm is an unrelated read (a GET of the VPC that stays, which the API
// server answers from etcd, not from the dependents' cache) after each
// pause, so that every measured request finds the connections as warm as
// the one before it did.
func (d deletes) warm(ctx context.Context, t *testing.T) {
	t.Helper()
	_, err := d.vpcs.Get(ctx, "vpc-target", metav1.GetOptions{})
	check.Must(t, err)
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// trial creates its objects, named after name, and measures, each read of
// the dependents a pause after the previous one: when list is set, (d) by
// calling it; an unmeasured unprotected delete, so that (b) finds the
// servers as busy as (a) will; (b), the allowed delete of the VPC name;
// when backToBack, (b') right after it; (a), the unprotected delete of
// name-floor; then (c), the denied delete of vpc-target.
func (d deletes) trial(ctx context.Context, t *testing.T, name string, list func() (time.Duration, error), backToBack bool) trialResult {
	t.Helper()
	d.top.object(ctx, t, d.consumer, fixtures.FirewallRules, name, map[string]interface{}{}, nil)
	d.top.object(ctx, t, d.consumer, fixtures.FirewallRules, name+"-floor", map[string]interface{}{}, nil)
	var r trialResult
	var err error
	if list != nil {
		time.Sleep(pause)
		d.warm(ctx, t)
		r.listed, err = list()
		check.Must(t, err)
	}
	// The VPCs come last, so that they are deleted before the webhook's
	// settler gets to them (a second after their creation): (b) is a
	// decided delete.
	d.top.object(ctx, t, d.consumer, fixtures.VPCs, name, map[string]interface{}{}, nil)
	if backToBack {
		d.top.object(ctx, t, d.consumer, fixtures.VPCs, name+"-again", map[string]interface{}{}, nil)
	}
	time.Sleep(pause)
	d.warm(ctx, t)
	check.Must(t, d.fws.Delete(ctx, name, metav1.DeleteOptions{}))
	decided := func() (float64, float64) {
		return d.metric(ctx, t, `depctrl_webhook_decision_duration_seconds_sum{outcome="allowed"}`),
			d.metric(ctx, t, `depctrl_webhook_decision_duration_seconds_count{outcome="allowed"}`)
	}
	sum0, count0 := decided()
	read0 := d.examined(ctx, t)
	r.allowed, err = timed(func() error { return d.vpcs.Delete(ctx, name, metav1.DeleteOptions{}) })
	check.Must(t, err)
	sum1, count1 := decided()
	r.read = d.examined(ctx, t) - read0
	if count1 > count0 {
		r.inWebhook = time.Duration((sum1 - sum0) / (count1 - count0) * float64(time.Second))
	}
	if backToBack {
		r.again, err = timed(func() error { return d.vpcs.Delete(ctx, name+"-again", metav1.DeleteOptions{}) })
		check.Must(t, err)
	}
	r.floor, err = timed(func() error { return d.fws.Delete(ctx, name+"-floor", metav1.DeleteOptions{}) })
	check.Must(t, err)
	time.Sleep(pause)
	d.warm(ctx, t)
	r.denied, err = timed(func() error { return d.vpcs.Delete(ctx, "vpc-target", metav1.DeleteOptions{}) })
	if err == nil || !strings.Contains(err.Error(), "still referenced by VirtualMachine/zz-blocker") {
		t.Fatalf("deleting vpc-target (%s): want a denial naming zz-blocker, got %v", name, err)
	}
	return r
}

// trials runs three warm-up trials and benchTrials measured ones, named
// prefix-0, prefix-1, ..., and returns the measured ones.
func (d deletes) trials(ctx context.Context, t *testing.T, prefix string, list func() (time.Duration, error), backToBack bool) []trialResult {
	t.Helper()
	var out []trialResult
	for i := -3; i < benchTrials; i++ {
		r := d.trial(ctx, t, fmt.Sprintf("%s-%d", prefix, i+3), list, backToBack)
		if i >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// meanInWebhook and meanRead average the webhook's own time and reads
// over trials.
func meanInWebhook(trials []trialResult) time.Duration {
	var sum time.Duration
	for _, r := range trials {
		sum += r.inWebhook
	}
	return sum / time.Duration(max(len(trials), 1))
}

func meanRead(trials []trialResult) float64 {
	var sum float64
	for _, r := range trials {
		sum += r.read
	}
	return sum / float64(max(len(trials), 1))
}
