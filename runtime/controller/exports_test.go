package controller

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// TestExportPrefetch: a run reads the exports the last one read before it
// plans, and keeps only what it could read: an export no rule needs any
// more must not fail the run.
func TestExportPrefetch(t *testing.T) {
	// The export "widgets" serves nothing: what it serves is the cache's
	// business (process.ExportCache); here only its reads count.
	widgets := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport", "metadata": map[string]interface{}{"name": "widgets", "resourceVersion": "1"}}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		process.APIExportsGVR: "APIExportList", process.APIResourceSchemasGVR: "APIResourceSchemaList"}, widgets)
	gets := 0
	client.PrependReactor("get", "apiexports", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		return false, nil, nil
	})
	r := &exportReader{
		client: func(url, cluster string) (dynamic.Interface, error) {
			if cluster == "unbound" {
				return nil, errors.New("no binding")
			}
			return client, nil
		},
		seen: map[exportKey]exportResult{}, cache: &process.ExportCache{},
	}
	r.prefetch(context.Background(), []exportKey{{"c1", "widgets"}, {"c1", "gone"}, {"unbound", "widgets"}})
	if len(r.errs) != 0 {
		t.Fatalf("prefetch kept errors: %v", r.errs)
	}
	if _, ok := r.seen[exportKey{"unbound", "widgets"}]; ok {
		t.Fatal("a failed prefetch was kept")
	}
	if _, err := r.read(context.Background(), "c1", "gone"); !errors.Is(err, process.ErrExportNotFound) {
		t.Fatalf("a missing export reads as %v, want process.ErrExportNotFound", err)
	}
	types, err := r.read(context.Background(), "c1", "widgets")
	if err != nil || types.Name != "widgets" || gets != 2 {
		t.Fatalf("read %+v, %v after %d GETs of exports; want the prefetched widgets and no GET more", types, err, gets)
	}
	keys := r.keys()
	if len(keys) != 2 {
		t.Fatalf("the next run would prefetch %v", keys)
	}
}
