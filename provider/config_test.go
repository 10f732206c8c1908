package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: kcp
  cluster:
    server: https://kcp.example.com:6443/clusters/root
- name: other
  cluster:
    server: https://other.example.com/prefix/clusters/root:org
contexts:
- name: kcp
  context: {cluster: kcp, user: admin}
- name: other
  context: {cluster: other, user: admin}
current-context: kcp
users:
- name: admin
  user: {token: secret}
`

func TestRestConfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", dir)
	tests := []struct {
		name     string
		settings ConnectionSettings
		wantHost string
		// wantAttr and wantErr describe the expected failure.
		wantAttr string
		wantErr  string
	}{
		{name: "nothing set", wantErr: "set kubeconfig_path, kubeconfig_raw or host"},
		{name: "kubeconfig path strips the workspace", settings: ConnectionSettings{KubeconfigPath: kubeconfig}, wantHost: "https://kcp.example.com:6443"},
		{name: "kubeconfig path under home", settings: ConnectionSettings{KubeconfigPath: "~/kubeconfig"}, wantHost: "https://kcp.example.com:6443"},
		{name: "context selects another server", settings: ConnectionSettings{KubeconfigPath: kubeconfig, Context: "other"}, wantHost: "https://other.example.com/prefix"},
		{name: "raw kubeconfig", settings: ConnectionSettings{KubeconfigRaw: testKubeconfig}, wantHost: "https://kcp.example.com:6443"},
		{name: "unknown context", settings: ConnectionSettings{KubeconfigRaw: testKubeconfig, Context: "nope"}, wantAttr: "context", wantErr: "nope"},
		{name: "missing kubeconfig file", settings: ConnectionSettings{KubeconfigPath: filepath.Join(dir, "absent")}, wantAttr: "kubeconfig_path", wantErr: "absent"},
		{name: "garbage kubeconfig", settings: ConnectionSettings{KubeconfigRaw: "{{{"}, wantAttr: "kubeconfig_raw", wantErr: "Invalid kubeconfig"},
		{name: "path and raw", settings: ConnectionSettings{KubeconfigPath: kubeconfig, KubeconfigRaw: testKubeconfig}, wantAttr: "kubeconfig_raw", wantErr: "not both"},
		{name: "host and kubeconfig", settings: ConnectionSettings{KubeconfigPath: kubeconfig, Host: "https://kcp"}, wantAttr: "host", wantErr: "alternative"},
		{name: "host with token", settings: ConnectionSettings{Host: "https://kcp.example.com/clusters/root:org", Token: "t"}, wantHost: "https://kcp.example.com"},
		{name: "host without credentials", settings: ConnectionSettings{Host: "https://kcp.example.com"}, wantAttr: "host", wantErr: "token or client_certificate"},
		{name: "plain http host", settings: ConnectionSettings{Host: "http://kcp.example.com", Token: "t"}, wantAttr: "host", wantErr: "https URL"},
		{name: "host without scheme", settings: ConnectionSettings{Host: "kcp.example.com:6443", Token: "t"}, wantAttr: "host", wantErr: "https URL"},
		{name: "certificate without key", settings: ConnectionSettings{Host: "https://kcp", ClientCertificate: "pem"}, wantAttr: "client_key", wantErr: "together"},
		{name: "key without certificate", settings: ConnectionSettings{Host: "https://kcp", ClientKey: "pem"}, wantAttr: "client_certificate", wantErr: "together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.settings.restConfig()
			if tt.wantErr != "" {
				se, ok := err.(*settingError)
				if !ok {
					t.Fatalf("want a settingError, got %T %v", err, err)
				}
				if se.Attribute != tt.wantAttr {
					t.Errorf("attribute = %q, want %q", se.Attribute, tt.wantAttr)
				}
				if !strings.Contains(se.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", se.Error(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tt.wantHost {
				t.Errorf("host = %q, want %q", cfg.Host, tt.wantHost)
			}
		})
	}
}

func TestRestConfigInsecureDropsCA(t *testing.T) {
	cfg, err := ConnectionSettings{Host: "https://kcp", Token: "t", ClusterCA: "pem", InsecureSkipVerify: true}.restConfig()
	if err != nil {
		t.Fatal(err)
	}
	// client-go refuses a configuration that both skips verification and
	// names a CA.
	if !cfg.Insecure || len(cfg.CAData) != 0 {
		t.Errorf("insecure=%v caData=%q, want insecure without a CA", cfg.Insecure, cfg.CAData)
	}
}

func TestWithEnvironment(t *testing.T) {
	env := map[string]string{
		EnvKubeconfig: "/from/env",
		EnvContext:    "ctx",
		EnvHost:       "https://env",
		EnvToken:      "env-token",
		EnvInsecure:   "true",
	}
	getenv := func(k string) string { return env[k] }

	got, err := ConnectionSettings{Token: "explicit"}.withEnvironment(getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := ConnectionSettings{KubeconfigPath: "/from/env", Context: "ctx", Host: "https://env", Token: "explicit", InsecureSkipVerify: true}
	if got != want {
		t.Errorf("got %+v, want %+v (attributes win over the environment)", got, want)
	}

	env[EnvInsecure] = "maybe"
	if _, err := (ConnectionSettings{}).withEnvironment(getenv); err == nil || !strings.Contains(err.Error(), EnvInsecure) {
		t.Errorf("want an error naming %s, got %v", EnvInsecure, err)
	}
}

func TestWorkspacePathValidator(t *testing.T) {
	for path, valid := range map[string]bool{
		"root":                 true,
		"root:org":             true,
		"root:org:team:net-01": true,
		"":                     false,
		"org":                  false,
		"root:":                false,
		"root::org":            false,
		"root:Org":             false,
		"root:org-":            false,
		"root/org":             false,
	} {
		if got := workspacePathRE.MatchString(path); got != valid {
			t.Errorf("%q: valid = %v, want %v", path, got, valid)
		}
	}
}
