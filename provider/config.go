package provider

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment variables that stand in for provider attributes. KUBECONFIG
// and in-cluster configuration are deliberately not consulted: a Terraform
// run must never act on whatever cluster happens to be current.
const (
	EnvKubeconfig = "KCP_KUBECONFIG"
	EnvContext    = "KCP_CONTEXT"
	EnvHost       = "KCP_HOST"
	EnvToken      = "KCP_TOKEN"
	EnvClientCert = "KCP_CLIENT_CERTIFICATE"
	EnvClientKey  = "KCP_CLIENT_KEY"
	EnvClusterCA  = "KCP_CLUSTER_CA_CERTIFICATE"
	EnvInsecure   = "KCP_INSECURE_SKIP_TLS_VERIFY"
	userAgent     = "terraform-provider-depctrl"

	// The Kubernetes cluster the runtime is deployed into; the same names
	// as the helm and kubernetes providers use.
	EnvKubeKubeconfig = "KUBE_CONFIG_PATH"
	EnvKubeContext    = "KUBE_CTX"
	EnvKubeHost       = "KUBE_HOST"
	EnvKubeToken      = "KUBE_TOKEN"
	EnvKubeClientCert = "KUBE_CLIENT_CERT_DATA"
	EnvKubeClientKey  = "KUBE_CLIENT_KEY_DATA"
	EnvKubeClusterCA  = "KUBE_CLUSTER_CA_CERT_DATA"
	EnvKubeInsecure   = "KUBE_INSECURE"
	defaultQPS        = 50
	defaultBurst      = 100
	nothingConfigured = "set kubeconfig_path, kubeconfig_raw or host in the provider block, or the " + EnvKubeconfig + " or " + EnvHost + " environment variable"
)

// connectionTarget is what a set of connection settings points at: kcp
// (the provider's own attributes) or the Kubernetes cluster of the
// provider's kubernetes block.
type connectionTarget struct {
	label string
	// attrPrefix turns an attribute name into its path in the provider
	// block, such as "kubernetes." + "host".
	attrPrefix string
	env        [8]string // kubeconfig, context, host, token, cert, key, CA, insecure
	nothing    string
	// workspaces: kcp URLs may name a workspace, which the provider drops.
	workspaces bool
}

var (
	kcpTarget = &connectionTarget{
		label:      "kcp",
		env:        [8]string{EnvKubeconfig, EnvContext, EnvHost, EnvToken, EnvClientCert, EnvClientKey, EnvClusterCA, EnvInsecure},
		nothing:    nothingConfigured,
		workspaces: true,
	}
	kubeTarget = &connectionTarget{
		label:      "Kubernetes",
		attrPrefix: "kubernetes.",
		env:        [8]string{EnvKubeKubeconfig, EnvKubeContext, EnvKubeHost, EnvKubeToken, EnvKubeClientCert, EnvKubeClientKey, EnvKubeClusterCA, EnvKubeInsecure},
		nothing: "depctrl_runtime deploys into a Kubernetes cluster: set kubeconfig_path, kubeconfig_raw or host in the provider's kubernetes block, or the " +
			EnvKubeKubeconfig + " or " + EnvKubeHost + " environment variable",
	}
)

// ConnectionSettings is how the provider reaches kcp (or, for the
// kubernetes block, the cluster the runtime runs in), after environment
// defaults are applied. Empty strings mean "not set".
type ConnectionSettings struct {
	KubeconfigPath     string
	KubeconfigRaw      string
	Context            string
	Host               string
	Token              string
	ClientCertificate  string
	ClientKey          string
	ClusterCA          string
	InsecureSkipVerify bool

	target *connectionTarget // nil means kcp
}

func (s ConnectionSettings) tgt() *connectionTarget {
	if s.target == nil {
		return kcpTarget
	}
	return s.target
}

// withEnvironment fills unset settings from the environment.
func (s ConnectionSettings) withEnvironment(getenv func(string) string) (ConnectionSettings, error) {
	fill := func(v *string, name string) {
		if *v == "" {
			*v = getenv(name)
		}
	}
	env := s.tgt().env
	fill(&s.KubeconfigPath, env[0])
	fill(&s.Context, env[1])
	fill(&s.Host, env[2])
	fill(&s.Token, env[3])
	fill(&s.ClientCertificate, env[4])
	fill(&s.ClientKey, env[5])
	fill(&s.ClusterCA, env[6])
	if !s.InsecureSkipVerify {
		if v := getenv(env[7]); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return s, fmt.Errorf("%s=%q is not a boolean", env[7], v)
			}
			s.InsecureSkipVerify = b
		}
	}
	return s, nil
}

// settingError names the attribute at fault.
type settingError struct {
	Attribute string
	Summary   string
	Detail    string
}

func (e *settingError) Error() string { return e.Summary + ": " + e.Detail }

// restConfig turns settings into a client configuration. For kcp, Host is
// the front-proxy base URL, without any /clusters path. A settingError names
// the attribute at fault by its path in the provider block.
func (s ConnectionSettings) restConfig() (*rest.Config, error) {
	cfg, err := s.buildConfig()
	if se, ok := err.(*settingError); ok && se.Attribute != "" {
		se.Attribute = s.tgt().attrPrefix + se.Attribute
	}
	return cfg, err
}

func (s ConnectionSettings) buildConfig() (*rest.Config, error) {
	t := s.tgt()
	var cfg *rest.Config
	switch {
	case s.KubeconfigPath != "" && s.KubeconfigRaw != "":
		return nil, &settingError{"kubeconfig_raw", "Conflicting " + t.label + " connection settings", "set either kubeconfig_path or kubeconfig_raw, not both"}
	case s.Host != "" && (s.KubeconfigPath != "" || s.KubeconfigRaw != ""):
		return nil, &settingError{"host", "Conflicting " + t.label + " connection settings", "host is an alternative to a kubeconfig: set either host (with credentials) or kubeconfig_path/kubeconfig_raw"}
	case s.KubeconfigPath != "" || s.KubeconfigRaw != "":
		loaded, err := s.fromKubeconfig()
		if err != nil {
			return nil, err
		}
		cfg = loaded
	case s.Host != "":
		u, err := url.Parse(s.Host)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, &settingError{"host", "Invalid " + t.label + " host", fmt.Sprintf("host %q must be an https URL such as https://kcp.example.com:6443", s.Host)}
		}
		if (s.ClientCertificate == "") != (s.ClientKey == "") {
			attr := "client_key"
			if s.ClientKey != "" {
				attr = "client_certificate"
			}
			return nil, &settingError{attr, "Incomplete client certificate", "client_certificate and client_key must be set together"}
		}
		if s.Token == "" && s.ClientCertificate == "" {
			return nil, &settingError{"host", "Missing " + t.label + " credentials", "with host, also set token or client_certificate and client_key"}
		}
		cfg = &rest.Config{
			Host:        s.Host,
			BearerToken: s.Token,
			TLSClientConfig: rest.TLSClientConfig{
				CertData: []byte(s.ClientCertificate),
				KeyData:  []byte(s.ClientKey),
				CAData:   []byte(s.ClusterCA),
			},
		}
	default:
		return nil, &settingError{"", "No " + t.label + " connection configured", t.nothing}
	}
	if s.InsecureSkipVerify {
		cfg.Insecure = true
		cfg.CAData, cfg.CAFile = nil, ""
	}
	if t.workspaces {
		base, err := stripClustersPath(cfg.Host)
		if err != nil {
			return nil, &settingError{"host", "Invalid " + t.label + " host", err.Error()}
		}
		cfg.Host = base
	}
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = defaultQPS, defaultBurst
	return cfg, nil
}

func (s ConnectionSettings) fromKubeconfig() (*rest.Config, error) {
	attr := "kubeconfig_path"
	var raw []byte
	if s.KubeconfigRaw != "" {
		attr, raw = "kubeconfig_raw", []byte(s.KubeconfigRaw)
	} else {
		data, err := readFile(s.KubeconfigPath)
		if err != nil {
			return nil, &settingError{attr, "Cannot read kubeconfig", err.Error()}
		}
		raw = data
	}
	apiCfg, err := clientcmd.Load(raw)
	if err != nil {
		return nil, &settingError{attr, "Invalid kubeconfig", err.Error()}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: s.Context}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*apiCfg, s.Context, overrides, nil).ClientConfig()
	if err != nil {
		a := attr
		if s.Context != "" {
			a = "context"
		}
		return nil, &settingError{a, "Invalid kubeconfig", err.Error()}
	}
	return cfg, nil
}

// stripClustersPath removes a /clusters/<path> suffix: the provider
// addresses each workspace itself.
func stripClustersPath(host string) (string, error) {
	u, err := url.Parse(host)
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", host, err)
	}
	if i := strings.Index(u.Path, "/clusters/"); i >= 0 {
		u.Path = u.Path[:i]
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u.String(), nil
}

// readFile reads a file that a configuration names by p (see expandHome).
func readFile(p string) ([]byte, error) {
	expanded, err := expandHome(p)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(expanded)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", p, err)
	}
	return data, nil
}

// expandHome replaces a leading ~/ with the user's home directory, as a
// shell would for a path written in HCL.
func expandHome(p string) (string, error) {
	if !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expanding %q: %w", p, err)
	}
	return filepath.Join(home, p[2:]), nil
}
