package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
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
	GrantName             types.String `tfsdk:"grant_name"`
	BaseURL               types.String `tfsdk:"base_url"`
	Rules                 types.List   `tfsdk:"rules"`
	timed
}

func (r *shardResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	str := func(desc string, sensitive bool, v ...validator.String) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Sensitive: sensitive, MarkdownDescription: desc, Validators: v}
	}
	// resourceSet is a non-empty set of types as resource.group, such as example.
	resourceSet := func(desc, example string) schema.SetAttribute {
		return schema.SetAttribute{
			Optional:            true,
			ElementType:         types.StringType,
			MarkdownDescription: desc,
			Validators: []validator.Set{
				setvalidator.SizeAtLeast(1),
				setvalidator.ValueStringsAre(stringvalidator.RegexMatches(readResourceRE, "must be resource.group, such as "+example)),
			},
		}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "One kcp shard: the read access the webhook needs there. The webhook looks up dependents in consumer workspaces, " +
			"and a shard authorizes that against the RBAC in its own `system:admin` logical cluster, which the front-proxy cannot reach. " +
			"So this resource talks to the shard directly, with credentials for that shard, and manages a ClusterRole and " +
			"ClusterRoleBinding there. Adding a shard to the installation is adding one of these.\n\n" +
			"On create it checks that the URL answers and belongs to the shard named `name` (by comparing it with the Shard object's " +
			"base URL, read through the provider's front-proxy connection).\n\n" +
			"By default the webhook may read every resource on the shard, **secrets included**, and patch every resource, because it " +
			"cannot know in advance which types rules will name (it patches only the objects rules protect, and only the intent " +
			"annotations it records on them). List the dependent types in `read_resources` and the protected types in `protected_resources` " +
			"(the two together: the plan refuses either without the other) to narrow that to exactly what rules use; what is not listed then fails closed: deletions of a protected type whose dependents " +
			"cannot be read are denied, and so are writes of a dependent that newly references an object the webhook cannot patch " +
			"(it records the reference on that object before the write is stored), each with a permission error. " +
			"The webhook may also create `events.k8s.io` Events, to record each use of the skip-protection annotation on the deleted object.\n\n" +
			"Credentials: `kubeconfig_path`, or `client_certificate_path` and `client_key_path`, keep only file paths in state. " +
			"`client_certificate` and `client_key` put the key into state (marked sensitive); for an inline key, set none of these and give " +
			"the key in the provider block's `shard_credentials` for this shard instead: the provider configuration is never stored in state " +
			"and may come from ephemeral values. (A write-only attribute cannot serve here: the grant is read and destroyed with the same " +
			"credentials, and Terraform passes write-only values to create and update only.)",
		Attributes: map[string]schema.Attribute{
			"id": importIDAttribute("The shard name, the import ID."),
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The name of the Shard object in `root`, such as `root` or `shard-1`.",
				Validators:          []validator.String{objectNameValidator("must be a Shard object name such as shard-1")},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"url": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "The shard's own https URL, not the front-proxy's. Defaults to the server of `kubeconfig_path`, " +
					"then to the Shard object's base URL. It is checked against the base URL kcp records in the Shard object (`base_url`) as an endpoint, not as a string: " +
					"the ports must be equal (443 when none is written), and the host names equal or resolving to a shared address; paths are ignored. " +
					"So `https://10.0.0.5:6443` matches a base URL of `https://shard-1.kcp.internal:6443` that resolves to it.",
				Validators:    []validator.String{httpsURLValidator("https://shard-1.kcp.example.com:6443")},
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			},
			"kubeconfig_path": str("A kubeconfig with credentials for this shard that may manage RBAC in `system:admin` (for example a `system:masters` client certificate). "+
				"Its current context is used, or `context`; a `/clusters/...` suffix on its server is ignored.", false),
			"context":                 str("The context of `kubeconfig_path` to use, such as the `system:masters` one of a shard's admin kubeconfig that holds several; default its current context.", false),
			"client_certificate_path": str("A PEM client certificate file for the shard, as an alternative to `kubeconfig_path`; requires `client_key_path`.", false),
			"client_key_path":         str("The PEM private key file of `client_certificate_path`.", false),
			"client_certificate":      str("A PEM client certificate for the shard, inline; requires `client_key`.", false),
			"client_key":              str("The PEM private key of `client_certificate`, inline. It is stored in state; prefer `client_key_path`.", true),
			"ca_certificate":          str("The PEM CA that signed the shard's serving certificate, with the client certificate attributes.", false),
			"webhook_users":           subjectsAttribute("Users the webhook authenticates as, such as `depctrl-webhook`. At least one of `webhook_users` and `webhook_groups` is required."),
			"webhook_groups":          subjectsAttribute("Groups of the webhook identity."),
			"read_resources": resourceSet("The dependent types the webhook may read, as `resource.group` (`virtualmachines.compute.example.io`, "+
				"`*.compute.example.io` for a whole group, `configmaps` for the core group). Unset: everything, secrets included, and `patch` on everything. "+
				"Set, it requires `protected_resources`, and the plan refuses it alone: the narrowed grant patches only the types listed there, "+
				"and the webhook patches every protected object (without them, every new reference is refused and nothing is settled). "+
				"Narrowed, the webhook may also read LogicalClusters, to let a workspace that is being deleted finish whatever it holds, and list APIBindings, to tell a workspace's own type from the bound dependent type of the same name. "+
				"Read back from the ClusterRole on the shard, so import finds it and a type added or removed there by hand shows in the plan.",
				"virtualmachines.compute.example.io"),
			"protected_resources": resourceSet("The protected types, as `resource.group`: the webhook may `get`, `list` and `patch` their objects, "+
				"to record on an object the intent of a create or update of a dependent that newly references it, "+
				"to refuse that write when the object is being deleted, and to label the objects it finds unreferenced as settled. "+
				"Required with `read_resources` and refused without it (without it the webhook reads and patches everything); at least one type. "+
				"List the targets of your rules' dependencies; a type that is also a dependent goes in both sets. "+
				"The plan cannot check that this covers every type your rules protect (rules are applied anywhere, and change after the grant): "+
				"a protected type not listed here makes every new reference to it fail closed with a permission error "+
				"(`cannot record on <resource>/<name> ... forbidden`), and its objects are never settled, so the webhook decides each of their deletions. "+
				"Add the type here before the rule that protects it takes effect, or such writes are refused until it is. "+
				"Read back from the ClusterRole on the shard, like `read_resources`.",
				"vpcs.network.example.io"),
			"reindex": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				MarkdownDescription: "Also grant `patch` on the `read_resources`, so that the webhook re-indexes dependents by itself. " +
					"Dependents written before their rule (or its last edit) carry no index labels and are read in full at every " +
					"protected deletion in their namespace; with this grant the webhook writes each one it finds that way again, " +
					"with an empty patch that changes nothing but its index labels, and later deletions skip it. " +
					"Without it, they are re-indexed by their next write. Requires `read_resources`: without it the webhook may patch everything already. Default `false`.",
			},
			"grant_name": nameAttribute(rbac.ShardReaderName, "The name of the ClusterRole and ClusterRoleBinding. Change it only to run two installations in one kcp."),
			"base_url":   computedKept("The base URL kcp records for the shard in its Shard object."),
			"rules":      computedList("The rules of the granted ClusterRole on the shard, one per line."),
		},
		Blocks: timeoutsOnly(ctx, "the {op} of the grant", sameTimeouts(defaultRBACTimeout)),
	}
	documentSchema(ctx, &resp.Schema)
}

// shardIdentity names the grant on a shard: the shard and the name of the
// ClusterRole and ClusterRoleBinding in its system:admin. The other
// attributes say, in an import block only, where the credentials for the
// shard are, as the import ID does; they are null in the stored identity.
type shardIdentity struct {
	Name                  types.String `tfsdk:"name"`
	GrantName             types.String `tfsdk:"grant_name"`
	KubeconfigPath        types.String `tfsdk:"kubeconfig_path"`
	Context               types.String `tfsdk:"context"`
	ClientCertificatePath types.String `tfsdk:"client_certificate_path"`
	ClientKeyPath         types.String `tfsdk:"client_key_path"`
	CACertificatePath     types.String `tfsdk:"ca_certificate_path"`
	URL                   types.String `tfsdk:"url"`
}

func shardIdentityOf(name, grant types.String) shardIdentity {
	null := types.StringNull()
	return shardIdentity{Name: name, GrantName: grant, KubeconfigPath: null, Context: null, ClientCertificatePath: null, ClientKeyPath: null, CACertificatePath: null, URL: null}
}

func (r *shardResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	importOnly := func(desc string) identityschema.StringAttribute {
		return identityschema.StringAttribute{OptionalForImport: true, Description: desc + " Import only: always null in the stored identity."}
	}
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"name": identityschema.StringAttribute{
				RequiredForImport: true,
				Description:       "The name of the Shard object in `root`, such as `shard-1`.",
			},
			"grant_name": identityschema.StringAttribute{
				OptionalForImport: true,
				Description:       "The name of the ClusterRole and ClusterRoleBinding on the shard, `" + rbac.ShardReaderName + "` when not given.",
			},
			"kubeconfig_path":         importOnly("A kubeconfig with credentials for the shard, as `kubeconfig_path` in the configuration. Give it or `client_certificate_path`, or neither to use the provider block's `shard_credentials`."),
			"context":                 importOnly("The context of `kubeconfig_path` to use."),
			"client_certificate_path": importOnly("A PEM client certificate file for the shard, with `client_key_path`, instead of `kubeconfig_path`."),
			"client_key_path":         importOnly("The PEM private key file of `client_certificate_path`."),
			"ca_certificate_path":     importOnly("A PEM file with the CA that signed the shard's serving certificate, with `client_certificate_path`; its content becomes `ca_certificate`."),
			"url":                     importOnly("The shard's own URL, as `url`; default the kubeconfig's server, else the Shard object's base URL."),
		},
	}
}

func (r *shardResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		// None: the provider block's shard_credentials (checked at plan).
		resourcevalidator.Conflicting(path.MatchRoot("kubeconfig_path"), path.MatchRoot("client_certificate_path"), path.MatchRoot("client_certificate")),
		resourcevalidator.RequiredTogether(path.MatchRoot("client_certificate_path"), path.MatchRoot("client_key_path")),
		resourcevalidator.Conflicting(path.MatchRoot("context"), path.MatchRoot("client_certificate_path")),
		resourcevalidator.Conflicting(path.MatchRoot("context"), path.MatchRoot("client_certificate")),
		resourcevalidator.RequiredTogether(path.MatchRoot("client_certificate"), path.MatchRoot("client_key")),
		resourcevalidator.AtLeastOneOf(path.MatchRoot("webhook_users"), path.MatchRoot("webhook_groups")),
	}
}

// ValidateConfig refuses at plan time the narrowed grants that cannot work
// or that ask for nothing:
//
//   - read_resources without protected_resources: the narrowed role grants
//     patch only on the types listed there, and the webhook patches every
//     protected object (to record the intent of a write that newly
//     references it, and to settle it), so every new reference would be
//     refused and nothing settled. The provider cannot derive the protected
//     types: rules may be applied by anyone, anywhere, and change after this
//     grant, so the plan cannot see them. Listed explicitly, they are what
//     the operator vouches for. An empty set would mean the same as none
//     (rules always protect something, or nothing needs narrowing), so the
//     attribute's own validator refuses it.
//   - protected_resources or reindex without read_resources: the wildcard
//     grant reads and patches everything already, so they would do nothing.
//
// read_resources not yet known (terraform validate, or a value computed from
// another resource) may still turn out null, so that check waits for it:
// Terraform validates the configuration again at plan, with values known.
func (r *shardResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	m, ok := getModel[shardModel](ctx, req.Config, &resp.Diagnostics)
	if !ok {
		return
	}
	if !m.ReadResources.IsNull() && !m.ReadResources.IsUnknown() && m.ProtectedResources.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("read_resources"), "read_resources needs protected_resources",
			"read_resources narrows the webhook's grant on the shard to the types named, and the webhook must patch every object "+
				"your rules protect: to record on it the intent of a write that newly references it, and to label it settled. "+
				"It may patch them only where protected_resources lists their types, so without protected_resources "+
				"every new reference in every consumer is refused (cannot record on <resource>/<name> ... forbidden) "+
				"and nothing is ever settled. List the types your rules protect (the targets of their dependencies; a type may be in both sets) "+
				"in protected_resources, or leave read_resources unset to let the webhook read and patch everything.")
	}
	if !m.ProtectedResources.IsNull() && m.ReadResources.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("protected_resources"), "protected_resources needs read_resources",
			"without read_resources the webhook may read everything on the shard, protected types included: "+
				"list the dependent types your rules use in read_resources, or leave protected_resources unset.")
	}
	if m.Reindex.ValueBool() && m.ReadResources.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("reindex"), "reindex needs read_resources",
			"reindex grants the webhook patch on the dependent types named in read_resources; without read_resources it may patch everything already: "+
				"list the dependent types your rules use in read_resources, or leave reindex unset.")
	}
}

func (m *shardModel) grant(ctx context.Context) (rbac.Grant, error) {
	var users, groups []string
	_ = m.WebhookUsers.ElementsAs(ctx, &users, false)
	_ = m.WebhookGroups.ElementsAs(ctx, &groups, false)
	dependents, err := parseReadResources(ctx, m.ReadResources)
	if err != nil {
		return rbac.Grant{}, err
	}
	protected, err := parseReadResources(ctx, m.ProtectedResources)
	if err != nil {
		return rbac.Grant{}, fmt.Errorf("protected_resources: %w", err)
	}
	access := rbac.ShardAccess{Dependents: dependents, Protected: protected, Reindex: m.Reindex.ValueBool()}
	return renamed(rbac.ShardReader(subjectsFrom(users, groups), access), m.GrantName.ValueString()), nil
}

func parseReadResources(ctx context.Context, l types.Set) ([]rbac.ReadResource, error) {
	var names []string
	_ = l.ElementsAs(ctx, &names, false)
	var out []rbac.ReadResource
	for _, s := range names {
		rr, err := rbac.ParseReadResource(s)
		if err != nil {
			return nil, err
		}
		out = append(out, rr)
	}
	return out, nil
}

// credentials are the resource's own credential attributes, else the
// provider block's shard_credentials entry for the shard.
func (m *shardModel) credentials(conn *Connection) (shardCredentials, error) {
	own := shardCredentials{
		KubeconfigPath: m.KubeconfigPath.ValueString(), Context: m.Context.ValueString(),
		CertPath: m.ClientCertificatePath.ValueString(), KeyPath: m.ClientKeyPath.ValueString(),
		Cert: m.ClientCertificate.ValueString(), Key: m.ClientKey.ValueString(), CA: m.CACertificate.ValueString(),
		from: "this depctrl_shard",
	}
	if !own.none() {
		return own, nil
	}
	name := m.Name.ValueString()
	if c, ok := conn.shards[name]; ok {
		return c, nil
	}
	return shardCredentials{}, fmt.Errorf("no credentials for shard %q: set kubeconfig_path, client_certificate_path or client_certificate, "+
		"or give the provider block shard_credentials = { %q = { ... } }", name, name)
}

// shardConfig builds a client configuration that talks to the shard itself,
// scoped to system:admin. The URL comes from the url attribute, then the
// kubeconfig's server.
func (m *shardModel) shardConfig(conn *Connection) (*rest.Config, error) {
	creds, err := m.credentials(conn)
	if err != nil {
		return nil, err
	}
	cfg, err := creds.restConfig()
	if err != nil {
		return nil, err
	}
	if u := m.URL.ValueString(); u != "" {
		cfg.Host = u
	}
	if cfg.Host == "" {
		return nil, errNoShardURL
	}
	base, err := stripClustersPath(cfg.Host)
	if err != nil {
		return nil, err
	}
	cfg.Host = base + "/clusters/" + systemAdminCluster
	cfg.UserAgent = conn.userAgent()
	return cfg, nil
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
	if plan.ReadResources.IsUnknown() || plan.ProtectedResources.IsUnknown() || plan.Reindex.IsUnknown() {
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
		state.ReadResources, state.ProtectedResources = types.SetNull(types.StringType), types.SetNull(types.StringType)
		if narrowed {
			state.ReadResources = readResourceSet(access.Dependents)
			state.ProtectedResources = readResourceSet(access.Protected)
		}
		state.Reindex = types.BoolValue(access.Reindex)
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
// grant, which names no type.
func shardAccessFrom(rules []rbacv1.PolicyRule) (access rbac.ShardAccess, narrowed bool) {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, "*") && slices.Contains(r.Resources, "*") {
			return rbac.ShardAccess{}, false
		}
	}
	for _, r := range rules {
		watch, patch := slices.Contains(r.Verbs, "watch"), slices.Contains(r.Verbs, "patch")
		var into *[]rbac.ReadResource
		switch {
		case watch:
			into = &access.Dependents
			access.Reindex = access.Reindex || patch
		case patch:
			into = &access.Protected
		default:
			// The workspace access, Events, LogicalClusters and
			// APIBindings every narrowed grant has.
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				*into = append(*into, rbac.ReadResource{Group: g, Resource: res})
			}
		}
	}
	return access, true
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

// ImportState takes the shard name and where its credentials are, since
// import cannot see the resource's configuration:
// <name>[/<grant name>],<kubeconfig path>[,context=<context>][,url=<url>] or
// <name>[/<grant name>],<client certificate path>,<client key path>[,ca=<CA file>][,url=<url>],
// or only <name>[/<grant name>][,url=<url>] when the provider block's
// shard_credentials has the shard.
// The identity says the same in its attributes (shardIdentity). Read then
// finds the grant's subjects and types on the shard. Inline credentials
// are not in an ID (the provider block's shard_credentials serve instead); apply adopts an existing grant too.
func (r *shardResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	var id shardImportID
	var err error
	if byIdentity(req) {
		ident, ok := getModel[shardIdentity](ctx, req.Identity, &resp.Diagnostics)
		if !ok {
			return
		}
		if id, err = shardImportIDFromIdentity(ident); err != nil {
			resp.Diagnostics.AddError("Invalid import identity", err.Error())
			return
		}
	} else if id, err = parseShardImportID(req.ID); err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	setIdentity(ctx, resp.Identity, shardIdentityOf(types.StringValue(id.name), types.StringValue(id.grant)), &resp.Diagnostics)
	set := func(attr, v string) {
		if v != "" {
			resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(attr), v)...)
		}
	}
	set("id", id.name)
	set("name", id.name)
	set("grant_name", id.grant)
	set("kubeconfig_path", id.kubeconfig)
	set("context", id.context)
	set("client_certificate_path", id.cert)
	set("client_key_path", id.key)
	set("url", id.url)
	if id.ca != "" {
		ca, err := readFile(id.ca)
		if err != nil {
			resp.Diagnostics.AddError("Invalid import ID", fmt.Sprintf("the CA of %q: %v", req.ID, err))
			return
		}
		set("ca_certificate", string(ca))
	}
}

// shardImportID is a parsed depctrl_shard import ID.
type shardImportID struct {
	name, grant, kubeconfig, context, cert, key, ca, url string
}

func parseShardImportID(s string) (shardImportID, error) {
	bad := fmt.Errorf("%q is not <shard name>[/<grant name>],<kubeconfig path>[,context=<context>][,url=<url>], "+
		"<shard name>[/<grant name>],<client certificate path>,<client key path>[,ca=<CA file>][,url=<url>], "+
		"or <shard name>[/<grant name>][,url=<url>] with the shard's credentials in the provider block's shard_credentials", s)
	parts := strings.Split(s, ",")
	var id shardImportID
	var named bool
	id.name, id.grant, named = strings.Cut(parts[0], "/")
	if !validObjectName(id.name) || (named && id.grant == "") || (len(parts) > 1 && parts[1] == "") {
		return shardImportID{}, bad
	}
	if !named {
		id.grant = rbac.ShardReaderName
	}
	option := func(p string) bool {
		return strings.HasPrefix(p, "context=") || strings.HasPrefix(p, "ca=") || strings.HasPrefix(p, "url=")
	}
	rest := parts[1:]
	switch {
	case len(rest) == 0 || option(rest[0]):
		// The provider block's shard_credentials.
	case len(rest) > 1 && !option(rest[1]):
		id.cert, id.key, rest = rest[0], rest[1], rest[2:]
	default:
		id.kubeconfig, rest = rest[0], rest[1:]
	}
	for _, p := range rest {
		key, value, _ := strings.Cut(p, "=")
		var into *string
		switch {
		case key == "context" && id.kubeconfig != "":
			into = &id.context
		case key == "ca" && id.cert != "":
			into = &id.ca
		case key == "url":
			into = &id.url
		}
		if into == nil || *into != "" || value == "" {
			return shardImportID{}, bad
		}
		*into = value
	}
	return id, nil
}

// shardImportIDFromIdentity checks an import block's identity as
// parseShardImportID checks an import ID.
func shardImportIDFromIdentity(ident shardIdentity) (shardImportID, error) {
	id := shardImportID{
		name: ident.Name.ValueString(), grant: ident.GrantName.ValueString(),
		kubeconfig: ident.KubeconfigPath.ValueString(), context: ident.Context.ValueString(),
		cert: ident.ClientCertificatePath.ValueString(), key: ident.ClientKeyPath.ValueString(),
		ca: ident.CACertificatePath.ValueString(), url: ident.URL.ValueString(),
	}
	if id.grant == "" {
		id.grant = rbac.ShardReaderName
	}
	switch {
	case !validObjectName(id.name):
		return id, fmt.Errorf("name %q is not a Shard name such as shard-1", id.name)
	case id.kubeconfig != "" && id.cert != "":
		return id, fmt.Errorf("give at most one of kubeconfig_path and client_certificate_path: importing shard %q reads its grant on the shard, "+
			"with the credentials they name, or with the provider block's shard_credentials for the shard when neither is given "+
			"(an identity cannot carry inline credentials)", id.name)
	case (id.cert == "") != (id.key == ""):
		return id, fmt.Errorf("client_certificate_path and client_key_path go together")
	case id.context != "" && id.kubeconfig == "":
		return id, fmt.Errorf("context needs kubeconfig_path")
	case id.ca != "" && id.cert == "":
		return id, fmt.Errorf("ca_certificate_path goes with client_certificate_path; a kubeconfig names its own CA")
	}
	return id, nil
}

// sameEndpoint reports whether two https URLs name the same listener: the
// same port and a host that resolves to a common address.
func sameEndpoint(a, b string) (bool, error) {
	ua, err := url.Parse(a)
	if err != nil {
		return false, err
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false, err
	}
	if portOf(ua) != portOf(ub) {
		return false, nil
	}
	if ua.Hostname() == ub.Hostname() {
		return true, nil
	}
	ipsA, err := net.LookupHost(ua.Hostname())
	if err != nil {
		return false, err
	}
	ipsB, err := net.LookupHost(ub.Hostname())
	if err != nil {
		return false, err
	}
	for _, x := range ipsA {
		if slices.Contains(ipsB, x) {
			return true, nil
		}
	}
	return false, nil
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return "443"
}

func stripSystemAdmin(host string) string {
	base, err := stripClustersPath(host)
	if err != nil {
		return host
	}
	return base
}
