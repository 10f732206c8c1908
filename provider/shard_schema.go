package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

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
			"The webhook may also create `events.k8s.io` Events, to record each use of the skip-protection annotation on the deleted object. " +
			"It may delete nothing, unless `deferred_deletion` grants it what carrying out deferred deletions takes.\n\n" +
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
				"Narrowed, the webhook may also read LogicalClusters, to let a workspace that is being deleted finish whatever it holds, list APIBindings, to tell a workspace's own type from the bound dependent type of the same name, and list Workspaces, to walk the workspace tree for protected objects to settle. "+
				"Read back from the ClusterRole on the shard, so import finds it and a type added or removed there by hand shows in the plan.",
				"virtualmachines.compute.example.io"),
			"protected_resources": resourceSet("The protected types, as `resource.group`: the webhook may `get`, `list` and `patch` their objects, "+
				"to record on an object the intent of a create or update of a dependent that newly references it, "+
				"to refuse that write when the object is being deleted, and to label the objects it finds unreferenced as settled. "+
				"Required with `read_resources` and with `deferred_deletion`, refused without either (without `read_resources` the webhook reads and patches everything, "+
				"and the types listed are only what `deferred_deletion` lets it delete); at least one type. "+
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
			"deferred_deletion": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				MarkdownDescription: "Also grant what the webhook needs to carry out deferred deletions, on this shard: `delete` on the `protected_resources` " +
					"and nothing else (required here, also without `read_resources`: the webhook that reads and patches everything still deletes only the types named; " +
					"each named one by one, since `*.group` would make every type of the group deletable), " +
					"`create` on `subjectaccessreviews.authorization.k8s.io`, " +
					"and, with `read_resources`, `get` on `namespaces` (the wildcard grant reads them already). " +
					"It pairs with `webhook.deferred_deletion` on `depctrl_runtime` (the webhook's `--deferred-deletion`): a deletion the webhook refuses because " +
					"dependents still reference the object, of an object that opts in (`" + v1alpha1.DeferDeletionAnnotation + ": \"true\"` on it or its namespace, " +
					"or `defer_deletion` on a `depctrl_dependency_rule` that protects it), " +
					"is recorded on the object, and the webhook deletes the object itself once nothing references it. It deletes with its own identity, " +
					"so it first asks kcp, with a SubjectAccessReview in the object's workspace, whether the user who asked may still delete the object; it reads the namespace for its opt-in. " +
					"Set it on every shard when the runtime defers deletions, and only then: without it, carrying out a deferred deletion fails with a permission error " +
					"and the object stays. Default `false`: the webhook may delete nothing on the shard. " +
					"Read back from the ClusterRole on the shard, like `reindex`: true only while the role holds all of this, so a part of it removed by hand shows in the plan.",
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
