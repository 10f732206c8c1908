/*
Copyright 2025 The kcp Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cache

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	k8scache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// TestWildcardCacheWrapsListerWatcher: the informers of a wildcard cache
// list and watch through WrapListerWatcher, and a mapper given in the
// cache's options spares it discovery, so that an informer can be created
// and synced although the server is never reached.
func TestWildcardCacheWrapsListerWatcher(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	var wrapped []runtime.Object
	c, err := NewWildcardCacheWithOptions(&rest.Config{Host: "https://127.0.0.1:1"}, cache.Options{Scheme: scheme.Scheme, Mapper: mapper},
		WildcardCacheOptions{WrapListerWatcher: func(_ k8scache.ListerWatcher, obj runtime.Object) k8scache.ListerWatcher {
			wrapped = append(wrapped, obj)
			return listThenWatch{&k8scache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					return &corev1.ConfigMapList{Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{
						Name: "listed", Namespace: "default", Annotations: map[string]string{"kcp.io/cluster": "foo"}}}}}, nil
				},
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					return watch.NewFake(), nil
				},
			}}
		}})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	require.NoError(t, err)
	require.Len(t, wrapped, 1, "one informer, created through the wrapper")
	require.IsType(t, &corev1.ConfigMap{}, wrapped[0])

	go func() { _ = c.Start(ctx) }()
	require.True(t, k8scache.WaitForCacheSync(ctx.Done(), inf.HasSynced), "the informer did not sync")
	list := &corev1.ConfigMapList{}
	require.NoError(t, c.List(ctx, list))
	require.Len(t, list.Items, 1)
	require.Equal(t, "listed", list.Items[0].Name)
}

// listThenWatch lists and then watches, rather than stream the initial
// list as watch events, which the fake watch above does not.
type listThenWatch struct{ *k8scache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }
