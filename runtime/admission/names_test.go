package admission

import "testing"

func TestNames(t *testing.T) {
	tests := []struct {
		value                 string
		name, ns, seg, clustr bool
	}{
		{value: "vpc-1", name: true, ns: true, seg: true, clustr: true},
		{value: "vpc.example", name: true, ns: false, seg: true, clustr: false},
		{value: "", name: false, ns: false, seg: false, clustr: false},
		{value: "..", name: false, ns: false, seg: false, clustr: false},
		{value: ".", name: false, ns: false, seg: false, clustr: false},
		{value: "../../clusters/b/apis/network.test.io/v1/namespaces/prod/vpcs/core", name: false, ns: false, seg: false, clustr: false},
		{value: "a%2F..", name: false, ns: false, seg: false, clustr: false},
		{value: "a/b", name: false, ns: false, seg: false, clustr: false},
		{value: "VPC_1", name: true, ns: false, seg: true, clustr: false},
		{value: "Upper", name: true, ns: false, seg: true, clustr: false},
		{value: "a,metadata.namespace=b", name: true, ns: false, seg: true, clustr: false},
		{value: "system:admin", name: true, ns: false, seg: true, clustr: true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			for _, c := range []struct {
				what string
				err  error
				want bool
			}{{"Name", Name(tt.value), tt.name}, {"Namespace", Namespace(tt.value), tt.ns}, {"Segment", Segment(tt.value), tt.seg}, {"Cluster", Cluster(tt.value), tt.clustr}} {
				if (c.err == nil) != c.want {
					t.Errorf("%s(%q) = %v, want accepted %v", c.what, tt.value, c.err, c.want)
				}
			}
		})
	}
}
