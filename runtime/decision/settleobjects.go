package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// The front-proxy implementation of settle.SettleObjects.

// metadataOnly asks the API server for the objects' metadata alone.
const metadataOnly = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// settlePageSize is how many objects' metadata one page of a sweep holds:
// a tenant may give each up to 256 KiB of annotations, so a page is at most
// some 25 MiB however its objects are written.
const settlePageSize = 100

// ListMeta implements SettleObjects with a consistent LIST of metadata,
// decoded a page at a time: a sweep of a namespace with 100 000 objects
// holds one page of their metadata, not all of it.
func (f *FrontProxyFinder) ListMeta(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace string, visit func(*metav1.ObjectMeta)) error {
	path, err := admission.Path(cluster, gvr, namespace, "")
	if err != nil {
		return err
	}
	cont := ""
	for {
		req := path.On(f.raw.Get()).SetHeader("Accept", metadataOnly).Param("limit", strconv.Itoa(settlePageSize))
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.Do(ctx).Raw()
		if err != nil {
			return fmt.Errorf("listing %s in %s: %w", gvr.GroupResource(), cluster, err)
		}
		var page metav1.PartialObjectMetadataList
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("decoding the list of %s in %s: %w", gvr.GroupResource(), cluster, err)
		}
		for i := range page.Items {
			visit(&page.Items[i].ObjectMeta)
		}
		if cont = page.Continue; cont == "" {
			return nil
		}
	}
}

// Settle implements SettleObjects with a merge patch that carries the
// resourceVersion the proof started from: the API server refuses it with a
// conflict when the object changed since, an intent recorded on it included.
func (f *FrontProxyFinder) Settle(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name, resourceVersion, stamp string) error {
	path, err := admission.Path(cluster, gvr, namespace, name)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion, "labels": map[string]string{settle.SettledLabel: stamp}}})
	if err != nil {
		return err
	}
	return path.On(f.raw.Patch(types.MergePatchType)).Body(body).Do(ctx).Error()
}
