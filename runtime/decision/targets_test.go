package decision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
)

// TestFrontProxyTargets reads and writes the referenced object in the
// dependent's namespace, then cluster-wide, and treats an absent object as
// not found.
func TestFrontProxyTargets(t *testing.T) {
	objects := map[string]string{
		"/clusters/c1/apis/network.test.io/v1/namespaces/apps/vpcs/live":      `{"metadata":{"name":"live","annotations":{"a":"b"}}}`,
		"/clusters/c1/apis/network.test.io/v1/namespaces/apps/vpcs/doomed":    `{"metadata":{"name":"doomed","deletionTimestamp":"2026-01-01T00:00:00Z"}}`,
		"/clusters/c1/apis/network.test.io/v1/vpcs/cluster-wide":              `{"metadata":{"name":"cluster-wide","deletionTimestamp":"2026-01-01T00:00:00Z"}}`,
		"/clusters/c1/apis/network.test.io/v1/namespaces/apps/vpcs/forbidden": "",
	}
	var mu sync.Mutex
	var sent []string
	f := objectFinder(t, objects, func(r *http.Request, body []byte) {
		mu.Lock()
		sent = append(sent, r.Method+" "+r.Header.Get("Content-Type")+" "+string(body))
		mu.Unlock()
	})
	for _, tt := range []struct {
		name    string
		want    index.TargetState
		wantErr bool
	}{
		{"live", index.TargetState{Found: true, Annotations: map[string]string{"a": "b"}}, false},
		{"doomed", index.TargetState{Found: true, Deleting: true}, false},
		{"cluster-wide", index.TargetState{Found: true, Deleting: true}, false},
		{"absent", index.TargetState{}, false},
		{"forbidden", index.TargetState{}, true},
	} {
		got, err := f.Target(context.Background(), "c1", "apps", vpcGVR, tt.name)
		if !reflect.DeepEqual(got, tt.want) || (err != nil) != tt.wantErr {
			t.Errorf("%s: %+v err=%v, want %+v (error %v)", tt.name, got, err, tt.want, tt.wantErr)
		}
		// A refusal says what was refused, as the server put it.
		if tt.wantErr && !apierrors.IsForbidden(err) {
			t.Errorf("%s: the error does not carry the server's refusal: %v", tt.name, err)
		}
	}

	sent = nil
	v := "x"
	if got, err := f.Annotate(context.Background(), "c1", "apps", vpcGVR, "cluster-wide", map[string]*string{"k": &v, "gone": nil}); err != nil || !got.Found || !got.Deleting {
		t.Fatalf("annotate: %+v %v", got, err)
	}
	want := []string{
		`PATCH application/merge-patch+json {"metadata":{"annotations":{"gone":null,"k":"x"},"labels":{"dependencies.opendefense.cloud/settled":null}}}`,
		`PATCH application/merge-patch+json {"metadata":{"annotations":{"gone":null,"k":"x"},"labels":{"dependencies.opendefense.cloud/settled":null}}}`,
	}
	if !slices.Equal(sent, want) {
		t.Errorf("annotate sent %q, want %q", sent, want)
	}
	sent = nil
	if err := f.Withdraw(context.Background(), "c1", "apps", vpcGVR, "live", "intent.dependencies.opendefense.cloud/t1", `{"name":"vm"}`); err != nil {
		t.Fatalf("withdraw: %v", err)
	}
	want = []string{`PATCH application/json-patch+json [{"op":"test","path":"/metadata/annotations/intent.dependencies.opendefense.cloud~1t1","value":"{\"name\":\"vm\"}"},{"op":"remove","path":"/metadata/annotations/intent.dependencies.opendefense.cloud~1t1"}]`}
	if !slices.Equal(sent, want) {
		t.Errorf("withdraw sent %q, want %q", sent, want)
	}
}

// objectFinder returns a finder whose front-proxy serves objects by URL
// path: an absent path is NotFound, an empty body Forbidden. seen, when
// set, is told of every request and its body.
func objectFinder(t *testing.T, objects map[string]string, seen func(r *http.Request, body []byte)) *FrontProxyFinder {
	t.Helper()
	return serveFinder(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if seen != nil {
			seen(r, body)
		}
		obj, ok := objects[r.URL.Path]
		w.Header().Set("Content-Type", "application/json")
		status := func(code int32, reason metav1.StatusReason) {
			w.WriteHeader(int(code))
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: code, Reason: reason})
		}
		switch {
		case !ok:
			status(http.StatusNotFound, metav1.StatusReasonNotFound)
		case obj == "":
			status(http.StatusForbidden, metav1.StatusReasonForbidden)
		default:
			_, _ = w.Write([]byte(obj))
		}
	}))
}

// TestWithdrawFromEveryNamespace: a cluster-scoped dependent's intent is
// withdrawn from every namespaced object of the name it references. An
// object that does not hold the intent (never had it, or holds another
// value) is left as it is and stops nothing; an object that cannot be
// written stops nothing either, and every such failure is returned.
func TestWithdrawFromEveryNamespace(t *testing.T) {
	const key, value = "intent.dependencies.opendefense.cloud/t1", `{"name":"region-1"}`
	namespaces := []string{"a", "b", "c"}
	tests := []struct {
		name string
		// holds is what each namespace's object holds under key, "" for
		// nothing.
		holds     map[string]string
		forbidden []string
		// left is what each object holds after the withdrawal.
		left    map[string]string
		wantErr []string
	}{
		{name: "every object holds the intent",
			holds: map[string]string{"a": value, "b": value, "c": value}, left: map[string]string{}},
		{name: "the first object does not hold it",
			holds: map[string]string{"b": value, "c": value}, left: map[string]string{}},
		{name: "an object in the middle does not hold it",
			holds: map[string]string{"a": value, "c": value}, left: map[string]string{}},
		{name: "an object holds another value under the key",
			holds: map[string]string{"a": "rewritten", "b": value, "c": value}, left: map[string]string{"a": "rewritten"}},
		{name: "an object cannot be written",
			holds: map[string]string{"a": value, "b": value, "c": value}, forbidden: []string{"a"},
			left: map[string]string{"a": value}, wantErr: []string{"namespace a"}},
		{name: "two objects cannot be written",
			holds: map[string]string{"a": value, "b": value, "c": value}, forbidden: []string{"a", "c"},
			left: map[string]string{"a": value, "c": value}, wantErr: []string{"namespace a", "namespace c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := &fakeFrontProxy{forbidden: map[string]bool{}}
			for _, ns := range namespaces {
				annotations := map[string]interface{}{"other": "kept"}
				if v, ok := tt.holds[ns]; ok {
					annotations[key] = v
				}
				fp.add("c1", vpcGVR, ns, "vpc-1", map[string]interface{}{"metadata": map[string]interface{}{"annotations": annotations}})
			}
			for _, ns := range tt.forbidden {
				fp.forbidden["c1|vpcs|"+ns+"|vpc-1"] = true
			}
			err := serveFinder(t, fp).Withdraw(context.Background(), "c1", "", vpcGVR, "vpc-1", key, value)
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatalf("withdraw: %v", err)
			}
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error = %v, want one that names %s", err, want)
				}
			}
			for _, ns := range namespaces {
				got := fp.annotations("c1", vpcGVR, ns, "vpc-1")
				if got["other"] != "kept" {
					t.Errorf("namespace %s: the object's other annotations are gone: %v", ns, got)
				}
				v, held := got[key]
				want, wantHeld := tt.left[ns]
				if held != wantHeld || (held && v != want) {
					t.Errorf("namespace %s: holds %q (%v) after the withdrawal, want %q (%v)", ns, v, held, want, wantHeld)
				}
			}
			patched := 0
			for _, r := range fp.sent() {
				if strings.HasPrefix(r, "PATCH /clusters/c1/apis/network.test.io/v1/namespaces/") {
					patched++
				}
			}
			if patched != len(namespaces) {
				t.Errorf("sent %d patches to namespaced objects, want one to each of %d: %q", patched, len(namespaces), fp.sent())
			}
		})
	}
}

// TestFailedTest: only the API server's refusal of a JSON patch that does
// not apply leaves an object as it is without an error; an object the patch
// would leave invalid names its fields, and any other refusal is an error.
func TestFailedTest(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a JSON patch whose test failed", apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "", 0, false), true},
		{"the same, wrapped", fmt.Errorf("vpcs vpc-1: %w", apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "", 0, false)), true},
		{"an object the patch would leave invalid", apierrors.NewInvalid(schema.GroupKind{Group: "network.test.io", Kind: "VPC"}, "vpc-1",
			field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations"), "x", "too long")}), false},
		{"forbidden", apierrors.NewForbidden(vpcGVR.GroupResource(), "vpc-1", errors.New("no")), false},
		{"a conflict", apierrors.NewConflict(vpcGVR.GroupResource(), "vpc-1", errors.New("changed")), false},
		{"not an API error", errors.New("connection refused"), false},
		{"no error", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failedTest(tt.err); got != tt.want {
				t.Fatalf("failedTest(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestTargetInEveryNamespace: a cluster-scoped dependent's reference reads
// the objects of that name in every namespace together, so that an intent
// held by any of them is seen (a withdrawal needs its value) even when the
// first object lacks it.
func TestTargetInEveryNamespace(t *testing.T) {
	const key = "intent.dependencies.opendefense.cloud/t1"
	fp := &fakeFrontProxy{}
	fp.add("c1", vpcGVR, "a", "vpc-1", map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{"other": "a"}}})
	fp.add("c1", vpcGVR, "b", "vpc-1", map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{"other": "b", key: "v"}}})
	state, err := serveFinder(t, fp).Target(context.Background(), "c1", "", vpcGVR, "vpc-1")
	if err != nil {
		t.Fatal(err)
	}
	if !state.Found || !state.AnyNamespace || state.Annotations[key] != "v" || state.Annotations["other"] != "a" {
		t.Fatalf("state = %+v, want found in every namespace, with b's intent and a's value of other", state)
	}
}
