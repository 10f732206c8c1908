package fieldpath_test

import (
	"encoding/json"
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
