package fieldpath_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
)

func TestParse(t *testing.T) {
	tests := []struct {
		path    string
		wantErr string
	}{
		{path: ".spec.vpcRef.name"},
		{path: ".spec.networks[*].vpcRef.name"},
		{path: ".spec.tags[*]"},
		{path: ".metadata.labels.app_name-2"},
		{path: "", wantErr: "empty"},
		{path: "spec.name", wantErr: "must start with a dot"},
		{path: ".spec.", wantErr: "ends with a dot"},
		{path: ".spec..name", wantErr: "invalid character '.' at position 6"},
		{path: ".spec.1name", wantErr: "invalid character '1'"},
		{path: ".spec.refs[0].name", wantErr: "only [*] may follow"},
		{path: ".spec.refs[*]name", wantErr: "expected '.' at position 13"},
		{path: ".spec.na me", wantErr: "expected '.' at position 8"},
		{path: "." + strings.Repeat("a", fieldpath.MaxLength), wantErr: "at most 256"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := fieldpath.Parse(tt.path)
			if tt.wantErr == "" {
				if err != nil || p.String() != tt.path {
					t.Fatalf("fieldpath.Parse(%q) = %q, %v", tt.path, p.String(), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("fieldpath.Parse(%q) error = %v, want it to contain %q", tt.path, err, tt.wantErr)
			}
		})
	}
}

func TestValues(t *testing.T) {
	obj := map[string]interface{}{
		"spec": map[string]interface{}{
			"vpcRef": map[string]interface{}{"name": "vpc-a"},
			"networks": []interface{}{
				map[string]interface{}{"vpcRef": map[string]interface{}{"name": "vpc-b"}},
				"not-a-map",
				map[string]interface{}{"vpcRef": map[string]interface{}{"name": 42}},
				map[string]interface{}{"vpcRef": map[string]interface{}{"name": "vpc-c"}},
			},
			"tags":   []interface{}{"x", "y"},
			"number": int64(3),
		},
	}
	tests := []struct {
		path string
		want []string
	}{
		{".spec.vpcRef.name", []string{"vpc-a"}},
		{".spec.networks[*].vpcRef.name", []string{"vpc-b", "vpc-c"}},
		{".spec.tags[*]", []string{"x", "y"}},
		{".spec.vpcRef[*].name", nil},
		{".spec.number", nil},
		{".spec.missing.name", nil},
		{".spec.vpcRef", nil},
	}
	for _, tt := range tests {
		got := fieldpath.MustParse(tt.path).Values(obj)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Values = %v, want %v", tt.path, got, tt.want)
		}
	}
	if !fieldpath.MustParse(".spec.networks[*].vpcRef.name").Matches(obj, "vpc-c") {
		t.Error("a list path must match any element")
	}
	if fieldpath.MustParse(".spec.networks[*].vpcRef.name").Matches(obj, "vpc-a") {
		t.Error("a list path must not match outside the list")
	}
}

// The schema's pattern and Parse must accept exactly the same paths.
func TestPatternAgreesWithParse(t *testing.T) {
	re := regexp.MustCompile(v1alpha1.FieldPathPattern)
	corpus := []string{
		".a", ".spec.vpcRef.name", ".spec.x[*]", ".spec.x[*].y", ".a-b._c9",
		"", ".", "a", "..a", ".a.", ".9", ".a[0]", ".a[*", ".a[*]b", ".a b", ".a[*][*]", ".-a", ".a/b",
	}
	for _, p := range corpus {
		_, err := fieldpath.Parse(p)
		if (err == nil) != re.MatchString(p) {
			t.Errorf("%q: Parse error %v, pattern match %v", p, err, re.MatchString(p))
		}
	}
}
