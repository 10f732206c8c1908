package index

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// fakeMarks records marks; created, when set, runs on each (an object
// created meanwhile).
type fakeMarks struct {
	marked  []string
	err     error
	created func()
	// earlier says a mark stored before the write looked serves it.
	earlier bool
}

func (f *fakeMarks) Mark(_ context.Context, cluster string, gr schema.GroupResource, _ time.Time) (bool, error) {
	f.marked = append(f.marked, cluster+" "+gr.String())
	if f.created != nil {
		f.created()
	}
	return !f.earlier && f.err == nil, f.err
}

// TestPendingReferenceMarked: a write that references an object that does
// not exist marks the reference as pending before it is admitted, and then
// looks for the object again, so that one created meanwhile gets the
// intent; a mark that cannot be written refuses the write. Dry runs and
// references to existing objects mark nothing.
func TestPendingReferenceMarked(t *testing.T) {
	ready := make(chan struct{})
	close(ready)
	tests := []struct {
		name        string
		object      string
		dryRun      bool
		marks       *fakeMarks
		createLate  bool
		wantMarked  []string
		wantAsked   []string
		wantIntents bool
		wantCode    int32
	}{
		{name: "absent object: marked, then looked for again", object: vmReferencing("", "vpc-gone"), marks: &fakeMarks{},
			wantMarked: []string{"c1 vpcs.network.test.io"}, wantAsked: []string{"annotate apps/vpc-gone", "annotate apps/vpc-gone"}},
		{name: "object created between the lookup and the mark: it gets the intent", object: vmReferencing("", "vpc-gone"), marks: &fakeMarks{}, createLate: true,
			wantMarked: []string{"c1 vpcs.network.test.io"}, wantAsked: []string{"annotate apps/vpc-gone", "annotate apps/vpc-gone"}, wantIntents: true},
		{name: "a mark stored before the lookup serves: no second look", object: vmReferencing("", "vpc-gone"), marks: &fakeMarks{earlier: true},
			wantMarked: []string{"c1 vpcs.network.test.io"}, wantAsked: []string{"annotate apps/vpc-gone"}},
		{name: "a mark that cannot be written refuses", object: vmReferencing("", "vpc-gone"), marks: &fakeMarks{err: errors.New("forbidden")},
			wantMarked: []string{"c1 vpcs.network.test.io"}, wantAsked: []string{"annotate apps/vpc-gone"}, wantCode: 503},
		{name: "existing object: no mark", object: vmReferencing("", "vpc-a"), marks: &fakeMarks{},
			wantAsked: []string{"annotate apps/vpc-a"}, wantIntents: true},
		{name: "dry run: no mark", object: vmReferencing("", "vpc-gone"), dryRun: true, marks: &fakeMarks{},
			wantAsked: []string{"get apps/vpc-gone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets := targetsFixture()
			if tt.createLate {
				tt.marks.created = func() { targets.objects["apps/vpc-gone"] = &TargetState{Found: true} }
			}
			ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
			ix.Targets, ix.Pending = targets, tt.marks
			req := &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, DryRun: &tt.dryRun, Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps",
				Object: runtime.RawExtension{Raw: []byte(tt.object)}}
			resp, _ := ix.Decide(context.Background(), req)
			if !slices.Equal(tt.marks.marked, tt.wantMarked) {
				t.Errorf("marked %v, want %v", tt.marks.marked, tt.wantMarked)
			}
			if !slices.Equal(targets.asked, tt.wantAsked) {
				t.Errorf("asked %v, want %v", targets.asked, tt.wantAsked)
			}
			if tt.wantCode != 0 {
				if resp.Allowed || resp.Result.Code != tt.wantCode || !strings.Contains(resp.Result.Message, "protection refuses the write") {
					t.Fatalf("got %+v, want a refusal with %d", resp.Result, tt.wantCode)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			if got := patchedLabels(t, resp)[v1alpha1.IntentLabel] != ""; got != tt.wantIntents {
				t.Errorf("intent recorded: %v, want %v", got, tt.wantIntents)
			}
		})
	}
}
