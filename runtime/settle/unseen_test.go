package settle

import (
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
)

func TestWrittenUnseen(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{".status.vpcRef.name", true},
		{".status.networks[*].vpc", true},
		{".status[*]", true},
		{".spec.vpcRef.name", false},
		{".spec.status", false},
		{".statusRef.name", false},
		{".metadata.labels.vpc", false},
		// Written by the scale subresource, but only ever as a number.
		{".spec.replicas", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := WrittenUnseen(fieldpath.MustParse(tt.path)); got != tt.want {
				t.Errorf("WrittenUnseen(%s) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}
