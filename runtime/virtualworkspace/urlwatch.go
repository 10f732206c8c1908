package virtualworkspace

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// WatchURLs calls changed whenever the export's APIExportEndpointSlice is
// created, changed or deleted (a shard gained or lost its first binding),
// until ctx ends. It returns at once; its watch retries on its own.
func (v *VirtualWorkspaces) WatchURLs(ctx context.Context, changed func()) error {
	c, err := dynamic.NewForConfigAndClient(rest.CopyConfig(v.Home), v.http)
	if err != nil {
		return fmt.Errorf("watching APIExportEndpointSlice %q: %w", v.ExportName, err)
	}
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", v.ExportName).String()
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(c, endpointSlicesGVR, "", 0, cache.Indexers{}, byName).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(any, any) { changed() },
		DeleteFunc: func(any) { changed() },
	}); err != nil {
		return fmt.Errorf("watching APIExportEndpointSlice %q: %w", v.ExportName, err)
	}
	go inf.RunWithContext(ctx)
	return nil
}
