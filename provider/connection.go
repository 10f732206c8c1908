package provider

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// Connection is what Configure hands to resources and data sources. It
// builds clients only when one is first needed, so a plan that touches
// nothing in kcp never connects, and it carries a configuration problem to
// the first use instead of failing Configure.
type Connection struct {
	base *rest.Config
	err  error
	// version of the provider binary: the default runtime image tag.
	version string

	once sync.Once
	kcp  kcpclientset.ClusterInterface
	kErr error

	// The cluster the runtime is deployed into (the kubernetes block).
	kube    *rest.Config
	kubeErr error

	// exports keeps what exports serve for the checks at plan: a plan of
	// many rules names the same few exports, and each read of an export
	// reads every schema it serves.
	exports process.ExportCache

	// rulePlans is what this run plans of rules, and what those plans
	// read of the rules in kcp, for the cycle check at plan.
	rulePlans rulePlans

	// shards are the provider block's shard_credentials, by Shard name.
	shards map[string]shardCredentials

	// mappers find the resource of a kind in a workspace, for
	// depctrl_object, by workspace path: each reads the workspace's
	// discovery once, and again when a kind is not found.
	mappersMu sync.Mutex
	mappers   map[string]meta.ResettableRESTMapper
}

// errConfigUnknown is returned while the provider configuration depends on
// values only known after apply.
var errConfigUnknown = errors.New("the depctrl provider configuration is not known until apply (it depends on resources not created yet); apply those first with -target, or split the configuration")

// Config returns a client configuration for the workspace at path (a
// workspace path such as root:org, or a logical cluster name).
func (c *Connection) Config(path string) (*rest.Config, error) {
	if c.err != nil {
		return nil, c.err
	}
	cfg := rest.CopyConfig(c.base)
	cfg.Host = strings.TrimSuffix(c.base.Host, "/") + "/clusters/" + path
	return cfg, nil
}

// Host is the front-proxy base URL.
func (c *Connection) Host() string {
	if c.base == nil {
		return ""
	}
	return c.base.Host
}

// KCP returns a cluster-aware kcp clientset.
func (c *Connection) KCP() (kcpclientset.ClusterInterface, error) {
	if c.err != nil {
		return nil, c.err
	}
	c.once.Do(func() {
		c.kcp, c.kErr = kcpclientset.NewForConfig(rest.CopyConfig(c.base))
	})
	return c.kcp, c.kErr
}

// Dynamic returns a dynamic client for the workspace at path.
func (c *Connection) Dynamic(path string) (dynamic.Interface, error) {
	cfg, err := c.Config(path)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client for %s: %w", path, err)
	}
	return d, nil
}

// RESTMapper returns a RESTMapper over the discovery of the workspace at
// path, shared by every user of the workspace in this run. Reset it when a
// kind is not found: discovery is read again on the next use.
func (c *Connection) RESTMapper(path string) (meta.ResettableRESTMapper, error) {
	c.mappersMu.Lock()
	defer c.mappersMu.Unlock()
	if m, ok := c.mappers[path]; ok {
		return m, nil
	}
	cfg, err := c.Config(path)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a discovery client for %s: %w", path, err)
	}
	m := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	if c.mappers == nil {
		c.mappers = map[string]meta.ResettableRESTMapper{}
	}
	c.mappers[path] = m
	return m, nil
}

// dynamicIn is Dynamic for a resource or data source: without a client,
// ok is false and diags says why connecting to kcp failed.
func (c *Connection) dynamicIn(path string, diags *diagnostics) (client dynamic.Interface, ok bool) {
	client, err := c.Dynamic(path)
	if err != nil {
		diags.Append(explain(c.Host(), "connecting to kcp", err))
		return nil, false
	}
	return client, true
}

// kcpClient is KCP for a resource or data source: without a client, ok is
// false and diags says why connecting to kcp failed.
func (c *Connection) kcpClient(diags *diagnostics) (client kcpclientset.ClusterInterface, ok bool) {
	client, err := c.KCP()
	if err != nil {
		diags.Append(explain(c.Host(), "connecting to kcp", err))
		return nil, false
	}
	return client, true
}

// kubeClients are Kube and KubeDynamic for depctrl_runtime: without them,
// ok is false and diags says why connecting to the cluster failed.
func (c *Connection) kubeClients(diags *diagnostics) (kube kubernetes.Interface, dyn dynamic.Interface, ok bool) {
	kube, err := c.Kube()
	if err == nil {
		dyn, err = c.KubeDynamic()
	}
	if err != nil {
		diags.Append(explainKube(c, "connecting to the Kubernetes cluster", err))
		return nil, nil, false
	}
	return kube, dyn, true
}

// KubeHost is the Kubernetes API server of the kubernetes block, if any.
func (c *Connection) KubeHost() string {
	if c.kube == nil {
		return ""
	}
	return c.kube.Host
}

// Kube returns a client for the cluster the runtime is deployed into.
func (c *Connection) Kube() (kubernetes.Interface, error) {
	return kubeClient(c, func(cfg *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(cfg) })
}

// KubeDynamic returns a dynamic client for the cluster the runtime is
// deployed into, for server-side apply of rendered objects.
func (c *Connection) KubeDynamic() (dynamic.Interface, error) {
	return kubeClient(c, func(cfg *rest.Config) (dynamic.Interface, error) { return dynamic.NewForConfig(cfg) })
}

// kubeClient builds a client of the kubernetes block's cluster with build,
// or says why there is none. T is an interface, so that a failure returns
// a nil one.
func kubeClient[T any](c *Connection, build func(*rest.Config) (T, error)) (T, error) {
	var none T
	if c.kubeErr != nil {
		return none, c.kubeErr
	}
	if c.kube == nil {
		return none, errors.New(kubeTarget.nothing)
	}
	client, err := build(rest.CopyConfig(c.kube))
	if err != nil {
		return none, fmt.Errorf("building a client for %s: %w", c.kube.Host, err)
	}
	return client, nil
}
