package decision

import (
	"context"
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// labelledList serves a LIST of items filtered by its label selector, and
// records the query of the last request.
type labelledList struct {
	items []map[string]interface{}
	query map[string][]string
}

func (s *labelledList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.query = r.URL.Query()
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var items []interface{}
	for _, it := range s.items {
		if sel.Matches(labels.Set(labelsOf(it))) {
			items = append(items, it)
		}
	}
	writeJSON(w, map[string]interface{}{"items": items})
}

func labelledVM(name, intent, vpc string, deleting bool) map[string]interface{} {
	o := vm("apps", name, vpc, deleting)
	if intent != "" {
		o["metadata"].(map[string]interface{})["labels"] = map[string]interface{}{v1alpha1.IntentLabel: intent}
	}
	return o
}

// TestStoredWith: one cached LIST tells, of the intent labels asked for,
// which a stored dependent carries and whether it references the object;
// a dependent being deleted references nothing; labels no dependent
// carries are absent.
func TestStoredWith(t *testing.T) {
	srv := &labelledList{items: []map[string]interface{}{
		labelledVM("vm-a", "ta.100", "vpc-1", false),
		labelledVM("vm-b", "tb.100", "vpc-2", false),
		labelledVM("vm-c", "tc.100", "vpc-1", true),
		labelledVM("vm-d", "td.100", "vpc-1", false),
		labelledVM("vm-e", "", "vpc-1", false),
	}}
	f := serveFinder(t, srv)
	p := registry.Protection{Dependent: schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"},
		Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}
	got, err := f.StoredWith(context.Background(), "c1", p, "apps", []string{"ta.100", "tb.100", "tc.100", "tx.100"}, "vpc-1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]index.Stored{"ta.100": {Name: "vm-a", References: true}, "tb.100": {Name: "vm-b"}, "tc.100": {Name: "vm-c"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if r, ok := got[k]; !ok || r != v {
			t.Errorf("%s: got %+v (present %v), want %+v", k, r, ok, v)
		}
	}
	if rv := srv.query["resourceVersion"]; len(rv) != 1 || rv[0] != "0" {
		t.Errorf("resourceVersion %v, want a read of the cache (0)", rv)
	}
}
