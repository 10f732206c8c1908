package index

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/go-logr/logr"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// FuzzIndexerDecide feeds arbitrary objects to the reference index. It must
// not panic; it refuses only objects it cannot read; and whatever it lets
// through carries, after its patch, exactly the index labels the object's
// fields call for, with every other label untouched.
func FuzzIndexerDecide(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"vm"},"spec":{"vpcRef":{"name":"vpc-a"}}}`))
	f.Add([]byte(`{"metadata":{"name":"vm","labels":{"team":"a","dependencies.opendefense.cloud/indexed":"old"}},"spec":{"networks":[{"vpc":"a"},{"vpc":"b"}]}}`))
	f.Add([]byte(`{"metadata":{"labels":null},"spec":{"vpcRef":{"name":""}}}`))
	f.Add([]byte(`{"metadata":{"labels":{"a":1}}}`))
	f.Add([]byte(`{"metadata":[]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))

	index := registry.Schema{Stamp: "s1", References: []registry.Reference{{Target: vpcGVR.GroupResource(),
		Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name"), fieldpath.MustParse(".spec.networks[*].vpc")}}}}
	ready := make(chan struct{})
	close(ready)
	ix := NewIndexer(schemaSource(index), admission.When(ready), logr.Discard())
	f.Fuzz(func(t *testing.T, object []byte) {
		req := &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Update, Name: "vm",
			Resource: metav1.GroupVersionResource(vmGVR), Object: runtime.RawExtension{Raw: object}}
		resp, _ := ix.Decide(context.Background(), req)

		var obj map[string]interface{}
		decodable := json.Unmarshal(object, &obj) == nil && obj != nil
		md, _ := obj["metadata"].(map[string]interface{})
		current, labelsErr := stringMap(md["labels"])
		readable := decodable && md != nil && labelsErr == nil
		if !resp.Allowed {
			if readable {
				t.Fatalf("refused a readable object: %v", resp.Result)
			}
			return
		}
		if !readable {
			t.Fatal("let through an object it cannot read")
		}
		got := current
		if resp.Patch != nil {
			patch, err := jsonpatch.DecodePatch(resp.Patch)
			if err != nil {
				t.Fatalf("undecodable patch %s: %v", resp.Patch, err)
			}
			out, err := patch.Apply(object)
			if err != nil {
				t.Fatalf("patch %s does not apply: %v", resp.Patch, err)
			}
			// Read the result as the API server does: field names are
			// case-sensitive.
			var patched map[string]interface{}
			if err := json.Unmarshal(out, &patched); err != nil {
				t.Fatalf("patched object: %v", err)
			}
			pmd, _ := patched["metadata"].(map[string]interface{})
			if got, err = stringMap(pmd["labels"]); err != nil {
				t.Fatalf("patched labels: %v", err)
			}
		}
		want, _ := registry.Relabel(current, index.Labels(obj))
		if !maps.Equal(got, want) {
			t.Fatalf("labels after admission = %v, want %v", got, want)
		}
	})
}
