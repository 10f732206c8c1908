package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
)

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
//   - protected_resources without read_resources, unless deferred_deletion
//     is on, and reindex without read_resources: the wildcard grant reads
//     and patches everything already, so they would do nothing. With
//     deferred_deletion, protected_resources are what the wildcard grant
//     may delete.
//   - deferred_deletion without protected_resources: the webhook may delete
//     only the types named, never everything on the shard.
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
	deferring := m.DeferredDeletion.ValueBool() || m.DeferredDeletion.IsUnknown()
	if !m.ProtectedResources.IsNull() && m.ReadResources.IsNull() && !deferring {
		resp.Diagnostics.AddAttributeError(path.Root("protected_resources"), "protected_resources needs read_resources or deferred_deletion",
			"without read_resources the webhook may read and patch everything on the shard, protected types included, "+
				"and protected_resources alone names only what deferred_deletion lets it delete: "+
				"list the dependent types your rules use in read_resources, set deferred_deletion, or leave protected_resources unset.")
	}
	if m.DeferredDeletion.ValueBool() && !m.ProtectedResources.IsUnknown() {
		var names []string
		_ = m.ProtectedResources.ElementsAs(ctx, &names, false)
		for _, n := range names {
			if rr, err := rbac.ParseReadResource(n); err == nil && rr.Resource == "*" {
				resp.Diagnostics.AddAttributeError(path.Root("protected_resources"), "deferred_deletion needs protected_resources that name types",
					fmt.Sprintf("%q names every type of its group, and deferred_deletion grants the webhook delete on each type listed in protected_resources: "+
						"on every one of the group's types, on every workspace of the shard. List the protected types one by one (vpcs.network.example.io), "+
						"or leave deferred_deletion unset.", n))
			}
		}
	}
	if m.DeferredDeletion.ValueBool() && m.ProtectedResources.IsNull() && m.ReadResources.IsNull() {
		// (Narrowed, read_resources needs them already: said above.)
		resp.Diagnostics.AddAttributeError(path.Root("deferred_deletion"), "deferred_deletion needs protected_resources",
			"deferred_deletion lets the webhook delete the objects whose deletion it deferred, and it may delete only the types "+
				"listed in protected_resources, never everything on the shard: list the types your rules protect "+
				"(the targets of their dependencies) in protected_resources, with or without read_resources.")
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
	access := rbac.ShardAccess{Dependents: dependents, Protected: protected, Reindex: m.Reindex.ValueBool(), DeferredDeletion: m.DeferredDeletion.ValueBool()}
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
