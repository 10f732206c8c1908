package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// Load of TestPopularObject: writers clients at once, each creating
// creates dependents of one object.
const (
	popularWriters = 32
	popularCreates = 20
)

// TestPopularObject: on the real two-shard kcp, with settling on, many
// clients at once create dependents that all reference one object. No
// legitimate write is refused under load: every create is admitted the
// first time. The object's delete is refused while any of them is stored,
// and allowed once they are all gone.
func TestPopularObject(t *testing.T) {
	ctx, e := integration(t, 20*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t)
	top.protectVPCs(ctx, t)
	ws := top.Consumers[0]
	top.object(ctx, t, ws, fixtures.VPCs, "hot", map[string]interface{}{}, nil)

	var (
		mu      sync.Mutex
		refused []string
		created []string
		wg      sync.WaitGroup
	)
	start := time.Now()
	for w := range popularWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A client of its own per writer, as separate programs would be.
			vms := top.dynamicFor(t, ws.Path).Resource(fixtures.VirtualMachines.GVR()).Namespace("apps")
			for i := range popularCreates {
				name := fmt.Sprintf("vm-%02d-%02d", w, i)
				_, err := vms.Create(ctx, vmInApps(name, "hot"), metav1.CreateOptions{})
				mu.Lock()
				if err != nil {
					refused = append(refused, name+": "+err.Error())
				} else {
					created = append(created, name)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d creates by %d clients in %s", popularWriters*popularCreates, popularWriters, time.Since(start).Round(time.Millisecond))
	if len(refused) > 0 {
		t.Fatalf("%d of %d creates referencing one VPC, %d clients at once, were refused; the first: %s",
			len(refused), popularWriters*popularCreates, popularWriters, refused[0])
	}
	top.expectDenied(ctx, t, ws, fixtures.VPCs, "hot", "still referenced by VirtualMachine/")

	vms := top.objects(t, ws, fixtures.VirtualMachines)
	for _, name := range created {
		check.Must(t, vms.Delete(ctx, name, metav1.DeleteOptions{}))
	}
	top.expectDeleted(ctx, t, ws, fixtures.VPCs, "hot")
}

// vmInApps is a VirtualMachine in the namespace apps referencing vpc.
func vmInApps(name, vpc string) *unstructured.Unstructured {
	u := vmObject(name, vpc)
	u.SetNamespace("apps")
	return u
}
