package process

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Workspace is a connection to one kcp workspace.
type Workspace struct {
	// Config talks to the workspace itself (Host ends in /clusters/<path>).
	Config *rest.Config
	// Base talks to the front-proxy (Host without the /clusters suffix);
	// point it at any logical cluster by appending /clusters/<name>.
	Base *rest.Config
	// Path is the workspace path or logical cluster name from the URL.
	Path string
}

// Load reads kubeconfigPath (the in-cluster or default rules when empty are
// deliberately not used: the runtime must be told where kcp is).
func Load(kubeconfigPath, context string) (*Workspace, error) {
	if kubeconfigPath == "" {
		return nil, fmt.Errorf("--kubeconfig is required: a kubeconfig whose server is the dep-ctrl workspace through the kcp front-proxy (https://<front-proxy>/clusters/<path>)")
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfigPath}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %q: %w", kubeconfigPath, err)
	}
	return FromConfig(cfg)
}

// FromConfig splits a workspace config into the workspace and front-proxy
// parts, refusing a server URL without a /clusters/<path> suffix.
func FromConfig(cfg *rest.Config) (*Workspace, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing server URL %q: %w", cfg.Host, err)
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("server URL %q must use https", cfg.Host)
	}
	idx := strings.Index(u.Path, "/clusters/")
	if idx < 0 {
		return nil, fmt.Errorf("server URL %q does not name a workspace: it must end in /clusters/<workspace path>, for example https://kcp.example.com/clusters/root:depctrl", cfg.Host)
	}
	path := strings.Trim(u.Path[idx+len("/clusters/"):], "/")
	if path == "" || strings.Contains(path, "/") || path == "*" {
		return nil, fmt.Errorf("server URL %q must name exactly one workspace after /clusters/", cfg.Host)
	}
	base := rest.CopyConfig(cfg)
	u.Path = u.Path[:idx]
	base.Host = u.String()
	return &Workspace{Config: rest.CopyConfig(cfg), Base: base, Path: path}, nil
}

// ForCluster returns a config for the logical cluster (or path) name,
// through the front-proxy.
func (w *Workspace) ForCluster(name string) *rest.Config {
	cfg := rest.CopyConfig(w.Base)
	cfg.Host = strings.TrimSuffix(w.Base.Host, "/") + "/clusters/" + name
	return cfg
}
