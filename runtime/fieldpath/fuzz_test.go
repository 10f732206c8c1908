package fieldpath_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{".spec.vpcRef.name", ".spec.x[*].y", "", "..", ".a[*", ".a[0]"} {
		f.Add(s)
	}
	re := regexp.MustCompile(v1alpha1.FieldPathPattern)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := fieldpath.Parse(s)
		if err != nil {
			if len(s) <= fieldpath.MaxLength && re.MatchString(s) {
				t.Fatalf("pattern accepts %q but Parse refuses it: %v", s, err)
			}
			return
		}
		if p.String() != s {
			t.Fatalf("round trip: %q -> %q", s, p.String())
		}
		if !re.MatchString(s) {
			t.Fatalf("Parse accepts %q but the pattern refuses it", s)
		}
	})
}

func FuzzValues(f *testing.F) {
	f.Add(".spec.refs[*].name", `{"spec":{"refs":[{"name":"a"},{"name":1},null]}}`)
	f.Add(".a.b", `{"a":{"b":"x"}}`)
	f.Fuzz(func(t *testing.T, path, doc string) {
		p, err := fieldpath.Parse(path)
		if err != nil {
			return
		}
		obj := map[string]interface{}{}
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		for _, v := range p.Values(obj) {
			if !p.Matches(obj, v) {
				t.Fatalf("Values returned %q but Matches does not find it", v)
			}
		}
	})
}

// FuzzProjection holds the projection to its promise: a path finds on the
// projected object exactly what it finds on the whole one.
func FuzzProjection(f *testing.F) {
	f.Add(".spec.refs[*].name", ".spec.refs.name", `{"spec":{"refs":[{"name":"a"},{"name":1},null,"x"]},"status":{"big":[1,2,3]}}`)
	f.Add(".a.b", ".a", `{"a":{"b":"x"}}`)
	f.Add(".a[*]", ".a[*].b", `{"a":["x",{"b":"y"},["z"]]}`)
	f.Add(".a.b", ".a.c", `{"a":{"b":"\u00e9\ud800","b":"dup"}}`)
	f.Fuzz(func(t *testing.T, path1, path2, doc string) {
		var paths []fieldpath.Path
		for _, s := range []string{path1, path2} {
			if p, err := fieldpath.Parse(s); err == nil {
				paths = append(paths, p)
			}
		}
		whole := map[string]interface{}{}
		wholeErr := json.Unmarshal([]byte(doc), &whole)
		projected, err := fieldpath.NewProjection(paths...).Decode([]byte(doc))
		if (wholeErr == nil) != (err == nil) {
			t.Fatalf("decoding %q: whole error %v, projection error %v", doc, wholeErr, err)
		}
		if err != nil {
			return
		}
		for _, p := range paths {
			want, got := p.Values(whole), p.Values(projected)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%s on %q: whole object yields %q, projection %q", p, doc, want, got)
			}
		}
	})
}
