package provider

import (
	"context"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/kcp-dev/logicalcluster/v3"
	corev1alpha1 "github.com/kcp-dev/sdk/apis/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

var _ list.ListResourceWithConfigure = &shardListResource{}

// NewShardListResource returns the depctrl_shard list resource.
func NewShardListResource() list.ListResource { return &shardListResource{resourceType{name: "shard"}} }

// shardListResource lists the shards, for `terraform query`: one
// depctrl_shard per shard. What a result cannot know are the credentials
// that reach the shard directly: the generated configuration needs them
// filled in (kubeconfig_path or client_*_path) before the import, unless
// the provider block's shard_credentials has them.
type shardListResource struct{ resourceType }

func (l *shardListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The shards of the kcp installation, from the Shard objects in `root`, sorted by name, each with its name " +
			"(the identity, with the default `grant_name`) and `url`, the URL at which the shard itself serves. The credentials that reach a " +
			"shard directly are not kcp's to list: add `kubeconfig_path` (or `client_*_path`) to each generated resource, and to its import " +
			"identity, before importing, or give each shard's credentials in the provider block's `shard_credentials`, and the generated " +
			"configuration imports as it is.",
		Attributes: map[string]schema.Attribute{},
	}
}

func (l *shardListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	kcp, err := l.conn.KCP()
	if err != nil {
		stream.Results = listError(explain(l.conn.Host(), "connecting to kcp", err))
		return
	}
	shards, err := kcp.Cluster(logicalcluster.NewPath("root")).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
	if err != nil {
		stream.Results = listError(explain(l.conn.Host(), "listing the shards in root", err))
		return
	}
	items := shards.Items
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	stream.Results = func(push func(list.ListResult) bool) {
		for i := range items {
			if req.Limit > 0 && int64(i) >= req.Limit {
				return
			}
			if !push(shardResult(ctx, req, &items[i])) {
				return
			}
		}
	}
}

// shardResult is one shard as a list result: its name, URLs and the
// default grant name.
func shardResult(ctx context.Context, req list.ListRequest, s *corev1alpha1.Shard) list.ListResult {
	name, grant := types.StringValue(s.Name), types.StringValue(rbac.ShardReaderName)
	return listResult(ctx, req, s.Name, shardIdentityOf(name, grant), func(r *tfsdk.Resource) diag.Diagnostics {
		var diags diag.Diagnostics
		for attr, v := range map[string]types.String{"id": name, "name": name, "grant_name": grant,
			"url": types.StringValue(s.Spec.BaseURL), "base_url": types.StringValue(s.Spec.BaseURL)} {
			diags.Append(r.SetAttribute(ctx, path.Root(attr), v)...)
		}
		return diags
	})
}
