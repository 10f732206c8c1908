package process

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

func TestFromConfig(t *testing.T) {
	tests := []struct {
		host, wantBase, wantPath, wantErr string
	}{
		{host: "https://kcp.example.com/clusters/root:depctrl", wantBase: "https://kcp.example.com", wantPath: "root:depctrl"},
		{host: "https://kcp.example.com:6443/prefix/clusters/abc123/", wantBase: "https://kcp.example.com:6443/prefix", wantPath: "abc123"},
		{host: "https://kcp.example.com", wantErr: "must end in /clusters/<workspace path>"},
		{host: "https://kcp.example.com/clusters/", wantErr: "exactly one workspace"},
		{host: "https://kcp.example.com/clusters/*", wantErr: "exactly one workspace"},
		{host: "http://kcp.example.com/clusters/root", wantErr: "must use https"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			w, err := FromConfig(&rest.Config{Host: tt.host})
			if check.WantError(t, err, tt.wantErr) {
				return
			}
			if w.Base.Host != tt.wantBase || w.Path != tt.wantPath {
				t.Fatalf("base %q path %q, want %q %q", w.Base.Host, w.Path, tt.wantBase, tt.wantPath)
			}
			if got := w.ForCluster("xyz").Host; got != tt.wantBase+"/clusters/xyz" {
				t.Fatalf("ForCluster = %q", got)
			}
		})
	}
}
