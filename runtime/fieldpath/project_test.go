package fieldpath_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
)

func TestProjection(t *testing.T) {
	doc := `{
	  "apiVersion": "compute.test.io/v1", "kind": "VirtualMachine",
	  "metadata": {"name": "vm-1", "namespace": "apps", "deletionTimestamp": "2026-01-01T00:00:00Z",
	               "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
	  "spec": {"vpcRef": {"name": "vpc-a"}, "networks": [{"vpcRef": {"name": "vpc-b"}}, "junk", {"vpcRef": {"name": 7}}],
	           "tags": ["x", 1, "y"], "cpu": 4},
	  "status": {"phase": "Running"}
	}`
	tests := []struct {
		paths []string
		want  map[string]interface{}
	}{
		{
			paths: []string{".spec.vpcRef.name"},
			want:  map[string]interface{}{"spec": map[string]interface{}{"vpcRef": map[string]interface{}{"name": "vpc-a"}}},
		},
		{
			paths: []string{".spec.networks[*].vpcRef.name", ".metadata.name"},
			want: map[string]interface{}{
				"metadata": map[string]interface{}{"name": "vm-1"},
				"spec": map[string]interface{}{"networks": []interface{}{
					map[string]interface{}{"vpcRef": map[string]interface{}{"name": "vpc-b"}},
					"junk",
					map[string]interface{}{"vpcRef": map[string]interface{}{"name": nil}},
				}},
			},
		},
		{
			paths: []string{".spec.tags[*]", ".spec.cpu"},
			want:  map[string]interface{}{"spec": map[string]interface{}{"tags": []interface{}{"x", nil, "y"}, "cpu": nil}},
		},
		{
			// A list reached without [*] leads nowhere, and neither does an
			// object entered with [*].
			paths: []string{".spec.tags.x", ".spec.vpcRef[*].name"},
			want:  map[string]interface{}{"spec": map[string]interface{}{"tags": nil, "vpcRef": nil}},
		},
		{
			paths: []string{".nothing.here"},
			want:  map[string]interface{}{},
		},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.paths, ","), func(t *testing.T) {
			var paths []fieldpath.Path
			for _, s := range tt.paths {
				paths = append(paths, fieldpath.MustParse(s))
			}
			got, err := fieldpath.NewProjection(paths...).Decode([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("projection = %#v\nwant %#v", got, tt.want)
			}
			whole := map[string]interface{}{}
			if err := json.Unmarshal([]byte(doc), &whole); err != nil {
				t.Fatal(err)
			}
			for _, p := range paths {
				if w, g := p.Values(whole), p.Values(got); !reflect.DeepEqual(w, g) {
					t.Errorf("%s: whole object yields %q, projection %q", p, w, g)
				}
			}
		})
	}
}

func TestProjectionRefusesMalformedJSON(t *testing.T) {
	for _, doc := range []string{`{"spec": {"vpcRef": {"name": "a"}}`, `{"status": [1,]}`, `[]`, ``} {
		if _, err := fieldpath.NewProjection(fieldpath.MustParse(".spec.vpcRef.name")).Decode([]byte(doc)); err == nil {
			t.Errorf("Decode(%q) succeeded, want an error", doc)
		}
	}
}

// dependentJSON is a dependent as kcp lists it: metadata with managed
// fields, a reference, and a status.
func dependentJSON(i int) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"compute.test.io/v1","kind":"VirtualMachine","metadata":{"annotations":{"kcp.io/cluster":"2x7pq4t8mkvl2dqf"},"creationTimestamp":"2026-11-23T10:00:00Z","generation":1,"managedFields":[{"apiVersion":"compute.test.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:vpcRef":{".":{},"f:name":{}}}},"manager":"depctrl-bench","operation":"Update","time":"2026-11-23T10:00:00Z"}],"name":"vm-%05d","namespace":"apps","resourceVersion":"%d","uid":"0b6c3a8e-6a1f-4d7e-9f7e-%012d"},"spec":{"cpu":2,"memory":"4Gi","vpcRef":{"name":"elsewhere-%d"}},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, i, 1000+i, i, i))
}

// BenchmarkDecodeDependent compares decoding a dependent whole, as a
// dynamic client does, with decoding its projection for one path and the
// metadata the webhook reads.
func BenchmarkDecodeDependent(b *testing.B) {
	doc := dependentJSON(42)
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			obj := map[string]interface{}{}
			if err := json.Unmarshal(doc, &obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("projection", func(b *testing.B) {
		proj := fieldpath.NewProjection(fieldpath.MustParse(".spec.vpcRef.name"), fieldpath.MustParse(".metadata.name"),
			fieldpath.MustParse(".metadata.namespace"), fieldpath.MustParse(".metadata.deletionTimestamp"))
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := proj.Decode(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
