package process

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ObjectClient returns a typed client of one logical cluster at the virtual
// workspace url. It reads and writes the server directly (no cache), and
// knows the resources of mapper only, so that it needs no discovery.
func (v *VirtualWorkspaces) ObjectClient(url, cluster string, scheme *runtime.Scheme, mapper meta.RESTMapper) (client.Client, error) {
	cfg := rest.CopyConfig(v.Home)
	cfg.Host = strings.TrimSuffix(url, "/") + "/clusters/" + cluster
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: v.http})
	if err != nil {
		return nil, fmt.Errorf("building a client of %s at %s: %w", cluster, url, err)
	}
	return c, nil
}
