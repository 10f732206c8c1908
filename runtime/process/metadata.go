package process

import (
	"context"
	"fmt"

	"github.com/kcp-dev/logicalcluster/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// ShardMeta is the metadata of an object read through a wildcard, and the
// logical cluster it lives in.
type ShardMeta struct {
	Cluster string
	Obj     metav1.PartialObjectMetadata
}

// ListShardMetadata lists the metadata of gvr across every workspace of one
// virtual workspace, straight from the server: what a caller compares
// with what its watches delivered, at the cost of the objects' metadata.
func (v *VirtualWorkspaces) ListShardMetadata(ctx context.Context, url string, gvr schema.GroupVersionResource) ([]ShardMeta, error) {
	c, err := metadata.NewForConfigAndClient(v.clusterConfig(url, "*"), v.http)
	if err != nil {
		return nil, err
	}
	var out []ShardMeta
	err = eachPage(func(opts metav1.ListOptions) (string, error) {
		list, err := c.Resource(gvr).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			out = append(out, ShardMeta{Cluster: logicalcluster.From(&list.Items[i]).String(), Obj: list.Items[i]})
		}
		return list.GetContinue(), nil
	})
	if err != nil && !notServedYet(gvr, err) {
		return nil, fmt.Errorf("listing the metadata of %s at %s: %w", gvr.GroupResource(), url, err)
	}
	return out, nil
}
