package fieldpath

import (
	"reflect"
	"testing"
)

func TestSegments(t *testing.T) {
	got := MustParse(".spec.zones[*].subnets[*].name").Segments()
	want := []Segment{{Field: "spec"}, {Field: "zones", Each: true}, {Field: "subnets", Each: true}, {Field: "name"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("segments %+v, want %+v", got, want)
	}
}
