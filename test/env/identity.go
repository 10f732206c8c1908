package env

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
)

// The users the runtime components run as in tests. They are ordinary users:
// everything they may do comes from RBAC that the tests (or Terraform) grant,
// never from an admin group.
const (
	ControllerUser = "depctrl-controller"
	WebhookUser    = "depctrl-webhook"
	// TenantUser stands for a consumer who owns workspaces but nothing else.
	TenantUser = "depctrl-tenant"
)

// Identity is a client certificate that every shard and the front-proxy
// accept.
type Identity struct {
	User     string   `json:"user"`
	Groups   []string `json:"groups,omitempty"`
	CertFile string   `json:"certFile"`
	KeyFile  string   `json:"keyFile"`
}

var safeFileName = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// Identity issues (or reuses) a client certificate for user in groups.
func (e *Env) Identity(user string, groups ...string) (Identity, error) {
	dir := filepath.Join(e.Dir, "identities")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Identity{}, err
	}
	base := safeFileName.ReplaceAllString(user+"_"+strings.Join(groups, "_"), "-")
	id := Identity{
		User:     user,
		Groups:   groups,
		CertFile: filepath.Join(dir, base+".crt"),
		KeyFile:  filepath.Join(dir, base+".key"),
	}
	if fileExists(id.CertFile) && fileExists(id.KeyFile) {
		return id, nil
	}
	caCert, err := os.ReadFile(e.ClientCACert)
	if err != nil {
		return Identity{}, fmt.Errorf("reading the client CA: %w", err)
	}
	caKey, err := os.ReadFile(e.ClientCAKey)
	if err != nil {
		return Identity{}, fmt.Errorf("reading the client CA: %w", err)
	}
	certPEM, keyPEM, err := certs.IssueClient(caCert, caKey, user, groups, certValidity)
	if err != nil {
		return Identity{}, fmt.Errorf("issuing the certificate of %s: %w", user, err)
	}
	// Write the key first and rename, so a concurrent reader never sees a
	// certificate without its key.
	if err := writeFileAtomic(id.KeyFile, keyPEM); err != nil {
		return Identity{}, err
	}
	if err := writeFileAtomic(id.CertFile, certPEM); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// MustIdentity is Identity for tests and the quickstart, where failure is fatal.
func (e *Env) MustIdentity(user string, groups ...string) Identity {
	id, err := e.Identity(user, groups...)
	if err != nil {
		panic(err)
	}
	return id
}

// AdminConfig returns kcp-admin credentials through the front-proxy, scoped
// to the logical cluster path (for example "root:org").
func (e *Env) AdminConfig(clusterPath string) (*rest.Config, error) {
	return kubeconfigFor(e.AdminKubeconfig, e.FrontProxyURL+"/clusters/"+clusterPath)
}

// IdentityConfig returns the identity's credentials through the front-proxy,
// scoped to clusterPath.
func (e *Env) IdentityConfig(id Identity, clusterPath string) *rest.Config {
	cfg := &rest.Config{
		Host: e.FrontProxyURL + "/clusters/" + clusterPath,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   e.CAFile,
			CertFile: id.CertFile,
			KeyFile:  id.KeyFile,
		},
	}
	tuneConfig(cfg)
	return cfg
}

// ShardAdminConfig returns system:masters credentials for one shard, reached
// directly, scoped to clusterPath (for example "system:admin").
func (e *Env) ShardAdminConfig(shard, clusterPath string) (*rest.Config, error) {
	s, err := e.Shard(shard)
	if err != nil {
		return nil, err
	}
	return kubeconfigFor(s.AdminKubeconfig, s.URL+"/clusters/"+clusterPath)
}

// kubeconfigFor returns the credentials of the kubeconfig at path for host:
// an admin kubeconfig's server is one logical cluster, a caller names
// another.
func kubeconfigFor(path, host string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %q: %w", path, err)
	}
	cfg.Host = host
	tuneConfig(cfg)
	return cfg, nil
}

// IdentityKubeconfig renders a kubeconfig for the identity whose server is
// the front-proxy scoped to clusterPath; certificates are embedded so the
// file stands alone.
func (e *Env) IdentityKubeconfig(id Identity, clusterPath string) ([]byte, error) {
	cfg, err := e.identityKubeconfig(id, e.FrontProxyURL+"/clusters/"+clusterPath)
	if err != nil {
		return nil, err
	}
	return clientcmd.Write(cfg)
}

// identityKubeconfig is a kubeconfig for id whose server is server, with
// the serving CA, id's certificate and key embedded so that it stands alone.
func (e *Env) identityKubeconfig(id Identity, server string) (clientcmdapi.Config, error) {
	ca, err := os.ReadFile(e.CAFile)
	if err != nil {
		return clientcmdapi.Config{}, fmt.Errorf("reading the serving CA: %w", err)
	}
	cert, err := os.ReadFile(id.CertFile)
	if err != nil {
		return clientcmdapi.Config{}, fmt.Errorf("reading the certificate of %s: %w", id.User, err)
	}
	key, err := os.ReadFile(id.KeyFile)
	if err != nil {
		return clientcmdapi.Config{}, fmt.Errorf("reading the key of %s: %w", id.User, err)
	}
	return kubeconfig(server, ca, cert, key, id.User), nil
}

func kubeconfig(server string, ca, cert, key []byte, user string) clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kcp"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "kcp", AuthInfo: user}
	cfg.CurrentContext = "default"
	return *cfg
}

// tuneConfig lifts client-side throttling: tests create many objects quickly
// against a server that is theirs alone.
func tuneConfig(cfg *rest.Config) {
	cfg.QPS = 200
	cfg.Burst = 400
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
