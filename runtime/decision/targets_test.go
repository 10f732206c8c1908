package decision

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
