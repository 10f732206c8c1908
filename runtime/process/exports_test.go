package process

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestExportCache: a run reads every export it needs unless it was read
// less than exportFreshFor before, and the export's schemas only when the
// export changed since the cached read, or the entry is older than
// exportCacheFor.
func TestExportCache(t *testing.T) {
	client, export, gets := widgetsExportClient()
	cache := &ExportCache{}
	read := func() {
		t.Helper()
		types, err := cache.Read(context.Background(), client, "c1", "widgets")
		if err != nil || len(types.Resources) != 1 || types.Resources[0].Kind != "Widget" {
			t.Fatalf("read %+v, %v", types, err)
		}
	}
	age := func(schemas bool) {
		for k, e := range cache.entries {
			e.checked = e.checked.Add(-exportFreshFor)
			if schemas {
				e.at = e.at.Add(-exportCacheFor)
			}
			cache.entries[k] = e
		}
	}
	read()
	read()
	if gets["apiexports"] != 1 || gets["apiresourceschemas"] != 1 {
		t.Fatalf("two runs in a row got the export %d times and its schema %d times, want 1 and 1", gets["apiexports"], gets["apiresourceschemas"])
	}
	age(false)
	read()
	if gets["apiexports"] != 2 || gets["apiresourceschemas"] != 1 {
		t.Fatalf("a run %s later got the export %d times and its schema %d times in all, want 2 and 1", exportFreshFor, gets["apiexports"], gets["apiresourceschemas"])
	}
	age(false)
	export.SetResourceVersion("2")
	if _, err := client.Resource(APIExportsGVR).Update(context.Background(), export, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	read()
	if gets["apiresourceschemas"] != 2 {
		t.Errorf("a changed export's schemas were not read again (%d reads)", gets["apiresourceschemas"])
	}
	age(true)
	read()
	if gets["apiresourceschemas"] != 3 {
		t.Errorf("the schemas of an entry older than %s were not read again (%d reads)", exportCacheFor, gets["apiresourceschemas"])
	}
}

// widgetsExportClient serves the export "widgets" (returned, to be
// changed) with one schema, and counts the GETs of each resource.
func widgetsExportClient() (*dynamicfake.FakeDynamicClient, *unstructured.Unstructured, map[string]int) {
	export := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
		"metadata": map[string]interface{}{"name": "widgets", "resourceVersion": "1"},
		"spec": map[string]interface{}{"resources": []interface{}{map[string]interface{}{
			"name": "widgets", "group": "widgets.test.io", "schema": "v1.widgets.widgets.test.io", "storage": map[string]interface{}{"crd": map[string]interface{}{}}}}},
	}}
	rs := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
		"metadata": map[string]interface{}{"name": "v1.widgets.widgets.test.io"},
		"spec": map[string]interface{}{"group": "widgets.test.io", "scope": "Namespaced",
			"names": map[string]interface{}{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []interface{}{map[string]interface{}{"name": "v1", "served": true, "storage": true,
				"schema": map[string]interface{}{"type": "object"}}}},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		APIExportsGVR: "APIExportList", APIResourceSchemasGVR: "APIResourceSchemaList"}, export, rs)
	gets := map[string]int{}
	client.PrependReactor("get", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gets[a.GetResource().Resource]++
		return false, nil, nil
	})
	return client, export, gets
}
