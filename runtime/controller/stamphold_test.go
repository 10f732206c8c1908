package controller

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// TestHoldStamps: a new stamp is published only once it has stood for
// stampHold, one already published stays, and a stamp that changes again
// starts over, as does one withdrawn after it was published; the wait
// returned is until the next held one is due.
func TestHoldStamps(t *testing.T) {
	vpcs, fws := testVPCs.GroupResource(), testFWs.GroupResource()
	start := time.Unix(1000, 0)
	seen := map[schema.GroupResource]stampSeen{}
	steps := []struct {
		name      string
		at        time.Duration
		stamps    Stamps
		published Stamps
		want      Stamps
		wait      time.Duration
	}{
		{"new stamps are held", 0, Stamps{vpcs: "a", fws: "x"}, Stamps{}, Stamps{}, stampHold},
		{"still held", 4 * time.Second, Stamps{vpcs: "a", fws: "x"}, Stamps{}, Stamps{}, stampHold - 4*time.Second},
		{"one changed: it starts over", 6 * time.Second, Stamps{vpcs: "b", fws: "x"}, Stamps{}, Stamps{}, stampHold - 6*time.Second},
		{"the unchanged one is due", stampHold, Stamps{vpcs: "b", fws: "x"}, Stamps{}, Stamps{fws: "x"}, 6 * time.Second},
		{"a published stamp stays, the other is due", stampHold + 6*time.Second, Stamps{vpcs: "b", fws: "x"}, Stamps{fws: "x"}, Stamps{vpcs: "b", fws: "x"}, 0},
		{"already published when first computed (a restarted controller)", stampHold + 7*time.Second, Stamps{vpcs: "b", fws: "y"}, Stamps{vpcs: "b", fws: "y"}, Stamps{vpcs: "b", fws: "y"}, 0},
		{"withdrawn by the webhook: held again", stampHold + 8*time.Second, Stamps{vpcs: "b", fws: "y"}, Stamps{fws: "y"}, Stamps{fws: "y"}, stampHold},
		{"still held", stampHold + 9*time.Second, Stamps{vpcs: "b", fws: "y"}, Stamps{fws: "y"}, Stamps{fws: "y"}, stampHold - time.Second},
		{"published again once it stood", 2*stampHold + 8*time.Second, Stamps{vpcs: "b", fws: "y"}, Stamps{fws: "y"}, Stamps{vpcs: "b", fws: "y"}, 0},
	}
	for _, s := range steps {
		stamps := Stamps{}
		for gr, v := range s.stamps {
			stamps[gr] = v
		}
		wait := holdStamps(stamps, s.published, seen, start.Add(s.at))
		if !reflect.DeepEqual(stamps, s.want) || wait != s.wait {
			t.Errorf("%s: published %v, wait %s; want %v, %s", s.name, stamps, wait, s.want, s.wait)
		}
	}
	holdStamps(Stamps{fws: "y"}, Stamps{}, seen, start.Add(time.Minute))
	if _, ok := seen[vpcs]; ok {
		t.Errorf("a type no rule protects any more is still remembered: %v", seen)
	}
}

// TestPublishedStamps reads back the stamps a rendered configuration
// publishes, by resource.
func TestPublishedStamps(t *testing.T) {
	settling := testSettings
	settling.Settle = true
	c := DesiredScopedWebhookConfiguration(settling, Protected{testVPCs: admission.Of("comp"), testFWs: admission.Of("comp"), testDBs: admission.Unnamed},
		currentOnly(Stamps{testVPCs.GroupResource(): "s1", testFWs.GroupResource(): "s2"}))
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	got := currentStamps(publishedStamps([]process.ShardObject{{Cluster: "net", Obj: &unstructured.Unstructured{Object: m}}}, testSettings.ConfigurationName))
	want := Stamps{testVPCs.GroupResource(): "s1", testFWs.GroupResource(): "s2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
}

// currentOnly publishes each of stamps as the current one, without its
// rules.
func currentOnly(stamps Stamps) map[schema.GroupResource]settle.Publication {
	out := map[schema.GroupResource]settle.Publication{}
	for gr, s := range stamps {
		out[gr] = settle.Publication{Current: s, Rules: map[string][]settle.RuleRef{s: nil}}
	}
	return out
}
