package process

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// SelfContained turns a kubeconfig into one that works anywhere: only the
// chosen context (the current one when context is empty) and its cluster and
// user remain, and files it references (relative ones resolved against
// baseDir) are embedded. With workspace set, the server is pointed at that
// workspace (https://<front-proxy>/clusters/<workspace>), whatever path it
// had: credentials issued for the front-proxy in general then work for the
// dep-ctrl workspace. It fails when the result is not a kubeconfig the
// runtime accepts, so a deployment never ships credentials that cannot work.
func SelfContained(raw []byte, baseDir, context, workspace string) ([]byte, error) {
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing kubeconfig: %w", err)
	}
	if context != "" {
		cfg.CurrentContext = context
	}
	if cfg.CurrentContext == "" {
		return nil, fmt.Errorf("the kubeconfig has no current context; name one")
	}
	if _, ok := cfg.Contexts[cfg.CurrentContext]; !ok {
		return nil, fmt.Errorf("the kubeconfig has no context %q", cfg.CurrentContext)
	}
	if baseDir != "" {
		for _, c := range cfg.Clusters {
			c.LocationOfOrigin = baseDir + "/kubeconfig"
		}
		for _, a := range cfg.AuthInfos {
			a.LocationOfOrigin = baseDir + "/kubeconfig"
		}
		if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
			return nil, fmt.Errorf("resolving paths in kubeconfig: %w", err)
		}
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("reducing kubeconfig to context %q: %w", cfg.CurrentContext, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("embedding files referenced by the kubeconfig: %w", err)
	}
	if workspace != "" {
		for name, c := range cfg.Clusters {
			u, err := url.Parse(c.Server)
			if err != nil {
				return nil, fmt.Errorf("parsing the server %q of cluster %q: %w", c.Server, name, err)
			}
			if i := strings.Index(u.Path, "/clusters/"); i >= 0 {
				u.Path = u.Path[:i]
			}
			u.Path = strings.TrimSuffix(u.Path, "/") + "/clusters/" + workspace
			c.Server = u.String()
		}
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig is not usable: %w", err)
	}
	if _, err := FromConfig(rest); err != nil {
		return nil, err
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}
	return out, nil
}
