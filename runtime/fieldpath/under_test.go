package fieldpath

import "testing"

func TestUnder(t *testing.T) {
	tests := []struct {
		path   string
		fields []string
		want   bool
	}{
		{".status", []string{"status"}, true},
		{".status.vpcRef.name", []string{"status"}, true},
		{".status[*].vpc", []string{"status"}, true},
		{".status.refs[*]", []string{"status"}, true},
		{".spec.status", []string{"status"}, false},
		{".statusRef.name", []string{"status"}, false},
		{".spec.vpcRef.name", []string{"status"}, false},
		{".spec.replicas", []string{"spec", "replicas"}, true},
		{".spec.replicas[*].vpc", []string{"spec", "replicas"}, true},
		{".spec.replicasRef", []string{"spec", "replicas"}, false},
		// What contains the written field is not in it: the scale
		// subresource cannot write .spec as a whole.
		{".spec", []string{"spec", "replicas"}, false},
		{".spec.vpcRef.name", nil, false},
	}
	for _, tt := range tests {
		if got := MustParse(tt.path).Under(tt.fields...); got != tt.want {
			t.Errorf("%s.Under(%q) = %v, want %v", tt.path, tt.fields, got, tt.want)
		}
	}
}
