package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/kcp-dev/logicalcluster/v3"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

var (
	_ identifiedResource                    = &shardResource{}
	_ resource.ResourceWithModifyPlan       = &shardResource{}
	_ resource.ResourceWithConfigValidators = &shardResource{}
	_ resource.ResourceWithValidateConfig   = &shardResource{}
)

// systemAdminCluster is the logical cluster whose RBAC a shard consults for
// every workspace it hosts.
const systemAdminCluster = "system:admin"

// NewShardResource returns the depctrl_shard resource.
func NewShardResource() resource.Resource { return &shardResource{resourceType{name: "shard"}} }

type shardResource struct{ resourceType }

type shardModel struct {
	ID                    types.String `tfsdk:"id"`
	Name                  types.String `tfsdk:"name"`
	URL                   types.String `tfsdk:"url"`
	KubeconfigPath        types.String `tfsdk:"kubeconfig_path"`
	Context               types.String `tfsdk:"context"`
	ClientCertificatePath types.String `tfsdk:"client_certificate_path"`
	ClientKeyPath         types.String `tfsdk:"client_key_path"`
	ClientCertificate     types.String `tfsdk:"client_certificate"`
	ClientKey             types.String `tfsdk:"client_key"`
	CACertificate         types.String `tfsdk:"ca_certificate"`
	WebhookUsers          types.Set    `tfsdk:"webhook_users"`
	WebhookGroups         types.Set    `tfsdk:"webhook_groups"`
	ReadResources         types.Set    `tfsdk:"read_resources"`
	ProtectedResources    types.Set    `tfsdk:"protected_resources"`
	Reindex               types.Bool   `tfsdk:"reindex"`
	DeferredDeletion      types.Bool   `tfsdk:"deferred_deletion"`
	GrantName             types.String `tfsdk:"grant_name"`
	BaseURL               types.String `tfsdk:"base_url"`
	Rules                 types.List   `tfsdk:"rules"`
	timed
}

// errNoShardURL: neither url nor a kubeconfig's server says where the shard
// is; create and import fall back to the Shard object's base URL.
var errNoShardURL = errors.New("no shard URL: set url")

func (r *shardResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	plan, ok := getModel[shardModel](ctx, req.Plan, &resp.Diagnostics)
	if !ok {
		return
	}
	ownUnknown := anyUnknown(plan.Name, plan.KubeconfigPath, plan.ClientCertificatePath, plan.ClientCertificate)
	if r.conn != nil && r.conn.err == nil && !ownUnknown {
		if _, err := plan.credentials(r.conn); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("name"), "No shard credentials", err.Error())
			return
		}
	}
	for _, e := range append(plan.ReadResources.Elements(), plan.ProtectedResources.Elements()...) {
		if e.IsUnknown() {
			return
		}
	}
	if plan.ReadResources.IsUnknown() || plan.ProtectedResources.IsUnknown() || plan.Reindex.IsUnknown() || plan.DeferredDeletion.IsUnknown() {
		return
	}
	g, err := plan.grant(ctx)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("read_resources"), "Invalid read_resources", err.Error())
		return
	}
	plan.Rules = stringList(ruleStrings(g.Role.Rules))
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *shardResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	plan, timeout, ok := getTimed[shardModel](ctx, req.Plan, timeouts.Value.Create, defaultRBACTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, cfg, ok := r.verify(ctx, &plan, &resp.Diagnostics)
	if !ok {
		return
	}
	plan.URL = types.StringValue(stripSystemAdmin(cfg.Host))
	r.apply(ctx, client, &plan, &resp.Diagnostics)
	saveState(ctx, &resp.State, resp.Identity, &plan, shardIdentityOf(plan.Name, plan.GrantName), &resp.Diagnostics)
}

func (r *shardResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	plan, timeout, ok := getTimed[shardModel](ctx, req.Plan, timeouts.Value.Update, defaultRBACTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, _, err := plan.client(r.conn)
	if err != nil {
		resp.Diagnostics.AddError("Invalid shard credentials", err.Error())
		return
	}
	r.apply(ctx, client, &plan, &resp.Diagnostics)
	saveState(ctx, &resp.State, resp.Identity, &plan, shardIdentityOf(plan.Name, plan.GrantName), &resp.Diagnostics)
}

func (m *shardModel) client(conn *Connection) (dynamic.Interface, *rest.Config, error) {
	cfg, err := m.shardConfig(conn)
	if err != nil {
		return nil, nil, err
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("building a client for shard %s: %w", m.Name.ValueString(), err)
	}
	return d, cfg, nil
}

// verify checks that the shard exists in kcp, that the URL reaches it, and
// that the credentials work there.
func (r *shardResource) verify(ctx context.Context, m *shardModel, diags *diagnostics) (dynamic.Interface, *rest.Config, bool) {
	name := m.Name.ValueString()
	kcp, err := r.conn.KCP()
	if err != nil {
		diags.Append(explain(r.conn.Host(), "connecting to kcp", err))
		return nil, nil, false
	}
	shards, err := kcp.Cluster(logicalcluster.NewPath("root")).CoreV1alpha1().Shards().List(ctx, metav1.ListOptions{})
	if err != nil {
		diags.Append(explain(r.conn.Host(), "listing the shards of the installation", err))
		return nil, nil, false
	}
	var names []string
	baseURL := ""
	for _, s := range shards.Items {
		names = append(names, s.Name)
		if s.Name == name {
			baseURL = s.Spec.BaseURL
		}
	}
	if baseURL == "" {
		slices.Sort(names)
		diags.AddAttributeError(path.Root("name"), "Shard not found",
			fmt.Sprintf("kcp has no shard named %q; its shards are %v", name, names))
		return nil, nil, false
	}
	m.BaseURL = types.StringValue(baseURL)
	if m.URL.IsUnknown() || m.URL.ValueString() == "" {
		m.URL = types.StringNull()
	}
	client, cfg, err := m.client(r.conn)
	if errors.Is(err, errNoShardURL) && m.URL.IsNull() {
		// Neither url nor a kubeconfig server: use what kcp records.
		m.URL = types.StringValue(baseURL)
		client, cfg, err = m.client(r.conn)
	}
	if err != nil {
		diags.AddError("Invalid shard credentials", err.Error())
		return nil, nil, false
	}
	shardURL := stripSystemAdmin(cfg.Host)
	if same, err := sameEndpoint(shardURL, baseURL); err != nil || !same {
		why := ""
		if err != nil {
			why = " (" + err.Error() + ")"
		}
		diags.AddAttributeError(path.Root("url"), "Not the shard's URL",
			fmt.Sprintf("%s is not the URL of shard %q: kcp records its base URL as %s%s. "+
				"Point url (or the kubeconfig's server) at that shard itself, not at the front-proxy or another shard.", shardURL, name, baseURL, why))
		return nil, nil, false
	}
	if _, err := client.Resource(clusterRolesGVR).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		diags.Append(explain(shardURL, fmt.Sprintf("reaching shard %q directly", name), err))
		return nil, nil, false
	}
	return client, cfg, true
}

func (r *shardResource) apply(ctx context.Context, client dynamic.Interface, m *shardModel, diags *diagnostics) {
	g, err := m.grant(ctx)
	if err != nil {
		diags.AddAttributeError(path.Root("read_resources"), "Invalid read_resources", err.Error())
		return
	}
	tflog.Info(ctx, "granting the webhook read access on a shard", map[string]interface{}{"shard": m.Name.ValueString()})
	if err := applyObjects(ctx, client, object{clusterRolesGVR, g.Role}, object{clusterRoleBindingsGVR, g.Binding}); err != nil {
		diags.Append(explain(m.URL.ValueString(), fmt.Sprintf("granting read access on shard %q", m.Name.ValueString()), err))
		return
	}
	m.ID = m.Name
	m.Rules = stringList(ruleStrings(g.Role.Rules))
}

// Read shows the grant as it is on the shard: changed rules or subjects
// show up as a diff that apply repairs.
func (r *shardResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, ok := getModel[shardModel](ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	if state.BaseURL.IsNull() {
		state.BaseURL = types.StringValue(r.baseURL(ctx, state.Name.ValueString()))
	}
	if state.URL.IsNull() {
		// Imported: the kubeconfig's server, else what kcp records, as
		// create does.
		if cfg, err := state.shardConfig(r.conn); err == nil {
			state.URL = types.StringValue(stripSystemAdmin(cfg.Host))
		} else if state.BaseURL.ValueString() != "" {
			state.URL = state.BaseURL
		}
	}
	client, _, err := state.client(r.conn)
	if err != nil {
		resp.Diagnostics.AddError("Invalid shard credentials", err.Error())
		return
	}
	name := state.GrantName.ValueString()
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	roleFound, err := getObject(ctx, client, clusterRolesGVR, name, &role)
	if err == nil {
		_, err = getObject(ctx, client, clusterRoleBindingsGVR, name, &binding)
	}
	if err != nil {
		resp.Diagnostics.Append(explain(state.URL.ValueString(), fmt.Sprintf("reading the grant on shard %q", state.Name.ValueString()), err))
		return
	}
	if roleFound {
		state.Rules = stringList(ruleStrings(role.Rules))
		// What was asked for, as the live role grants it: import finds the
		// configuration, and a type added or removed by hand shows in the
		// plan next to the rule it changed.
		access, narrowed := shardAccessFrom(role.Rules)
		state.ReadResources, state.ProtectedResources = types.SetNull(types.StringType), readResourceSet(access.Protected)
		if narrowed {
			state.ReadResources = readResourceSet(access.Dependents)
		}
		state.Reindex = types.BoolValue(access.Reindex)
		state.DeferredDeletion = types.BoolValue(access.DeferredDeletion)
	} else {
		state.Rules = stringList(nil)
	}
	users, groups := splitSubjects(binding.Subjects)
	state.WebhookUsers = keepNullIfEmpty(state.WebhookUsers, users)
	state.WebhookGroups = keepNullIfEmpty(state.WebhookGroups, groups)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	setIdentity(ctx, resp.Identity, shardIdentityOf(state.Name, state.GrantName), &resp.Diagnostics)
}

// shardAccessFrom reads back what rbac.ShardReader was asked for from the
// rules of the role it rendered: the dependent types are those the webhook
// may watch (reindex when it may also patch them), the protected types
// those it may patch without watching. narrowed is false for the wildcard
// grant, which names no type but, with deferred deletion, the protected
// types it may delete (rules of that verb alone). Deferred deletion is read
// back only when the role holds all that it adds: create on
// SubjectAccessReviews, delete on every protected type (with the wildcard:
// on some type, and not on everything, which an older grant held), and,
// narrowed, get on Namespaces; a part of it removed by hand shows in the
// plan as deferred_deletion to be granted again.
func shardAccessFrom(rules []rbacv1.PolicyRule) (access rbac.ShardAccess, narrowed bool) {
	reviews := slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return grants(r, "authorization.k8s.io", "subjectaccessreviews", "create")
	})
	for _, r := range rules {
		if slices.Contains(r.APIGroups, "*") && slices.Contains(r.Resources, "*") {
			return wildcardAccessFrom(rules, reviews && !slices.Contains(r.Verbs, "delete")), false
		}
	}
	access.DeferredDeletion = reviews && slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return grants(r, "", "namespaces", "get")
	})
	for _, r := range rules {
		watch, patch := slices.Contains(r.Verbs, "watch"), slices.Contains(r.Verbs, "patch")
		var into *[]rbac.ReadResource
		switch {
		case watch:
			into = &access.Dependents
			access.Reindex = access.Reindex || patch
		case patch:
			into = &access.Protected
			access.DeferredDeletion = access.DeferredDeletion && slices.Contains(r.Verbs, "delete")
		default:
			// The workspace access, Events, LogicalClusters,
			// APIBindings and Workspaces every narrowed grant has,
			// and the SubjectAccessReviews and Namespaces of
			// deferred deletion.
			continue
		}
		*into = append(*into, resourcesOf(r)...)
	}
	return access, true
}

// wildcardAccessFrom reads back the protected types the wildcard grant may
// delete, and whether that is deferred deletion granted in full (reviews:
// the rest of it is there).
func wildcardAccessFrom(rules []rbacv1.PolicyRule, reviews bool) rbac.ShardAccess {
	var access rbac.ShardAccess
	for _, r := range rules {
		if slices.Equal(r.Verbs, []string{"delete"}) {
			access.Protected = append(access.Protected, resourcesOf(r)...)
		}
	}
	access.DeferredDeletion = reviews && len(access.Protected) > 0
	return access
}

// resourcesOf is every group and resource rule r names.
func resourcesOf(r rbacv1.PolicyRule) []rbac.ReadResource {
	var out []rbac.ReadResource
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			out = append(out, rbac.ReadResource{Group: g, Resource: res})
		}
	}
	return out
}

// grants reports whether rule r names verb on resource in group, as such
// (not through a wildcard).
func grants(r rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
}

// readResourceSet writes types as read_resources does: resource.group, or
// the resource alone for the core group; null for none.
func readResourceSet(rs []rbac.ReadResource) types.Set {
	if len(rs) == 0 {
		return types.SetNull(types.StringType)
	}
	names := make([]string, 0, len(rs))
	for _, r := range rs {
		name := r.Resource
		if r.Group != "" {
			name += "." + r.Group
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return stringSet(slices.Compact(names))
}

// baseURL is the base URL kcp records for the shard, or "" when it cannot
// be read.
func (r *shardResource) baseURL(ctx context.Context, name string) string {
	kcp, err := r.conn.KCP()
	if err != nil {
		return ""
	}
	s, err := kcp.Cluster(logicalcluster.NewPath("root")).CoreV1alpha1().Shards().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return s.Spec.BaseURL
}

func (r *shardResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	state, timeout, ok := getTimed[shardModel](ctx, req.State, timeouts.Value.Delete, defaultRBACTimeout, &resp.Diagnostics)
	if !ok {
		return
	}
	client, _, err := state.client(r.conn)
	if err != nil {
		resp.Diagnostics.AddError("Invalid shard credentials", err.Error())
		return
	}
	g := renamed(rbac.ShardReader(nil, rbac.ShardAccess{}), state.GrantName.ValueString())
	tflog.Info(ctx, "revoking the webhook's read access on a shard", map[string]interface{}{"shard": state.Name.ValueString()})
	if err := deleteObjects(ctx, client, timeout, object{clusterRolesGVR, g.Role}, object{clusterRoleBindingsGVR, g.Binding}); err != nil {
		resp.Diagnostics.Append(explain(state.URL.ValueString(), fmt.Sprintf("revoking read access on shard %q", state.Name.ValueString()), err))
	}
}
