package process

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

func TestSelfContained(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("CA DATA"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := func(server string) []byte {
		return []byte(`apiVersion: v1
kind: Config
clusters:
- name: kcp
  cluster:
    server: ` + server + `
    certificate-authority: ca.crt
- name: other
  cluster:
    server: https://elsewhere.example.com
contexts:
- name: kcp
  context: {cluster: kcp, user: me}
- name: other
  context: {cluster: other, user: me}
current-context: kcp
users:
- name: me
  user: {token: secret}
`)
	}
	tests := []struct {
		name, server, context, workspace string
		wantServer, wantErr              string
	}{
		{name: "workspace URL", server: "https://kcp.example.com/clusters/root:depctrl", wantServer: "https://kcp.example.com/clusters/root:depctrl"},
		{name: "front-proxy URL pointed at the workspace", server: "https://kcp.example.com:6443/clusters/root", workspace: "root:depctrl", wantServer: "https://kcp.example.com:6443/clusters/root:depctrl"},
		{name: "bare front-proxy URL pointed at the workspace", server: "https://kcp.example.com/", workspace: "root:depctrl", wantServer: "https://kcp.example.com/clusters/root:depctrl"},
		{name: "no workspace", server: "https://kcp.example.com", wantErr: "does not name a workspace"},
		{name: "unknown context", server: "https://kcp.example.com/clusters/root", context: "nope", wantErr: `no context "nope"`},
		{name: "other context without workspace", server: "https://kcp.example.com/clusters/root", context: "other", wantErr: "does not name a workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := SelfContained(kubeconfig(tt.server), dir, tt.context, tt.workspace)
			if check.WantError(t, err, tt.wantErr) {
				return
			}
			cfg, err := clientcmd.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Clusters) != 1 || len(cfg.Contexts) != 1 {
				t.Errorf("kept %d clusters and %d contexts, want only the chosen one", len(cfg.Clusters), len(cfg.Contexts))
			}
			c := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
			if c.Server != tt.wantServer {
				t.Errorf("server %q, want %q", c.Server, tt.wantServer)
			}
			if string(c.CertificateAuthorityData) != "CA DATA" || c.CertificateAuthority != "" {
				t.Errorf("the CA file was not embedded: %+v", c)
			}
		})
	}
}
