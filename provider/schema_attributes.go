package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Attributes that several resources' schemas share. documentSchema adds
// to each description what the attribute's settings imply.

// workspaceObjectIDDoc describes the id of a resource that manages one
// named object in one workspace (workspaceObjectIdentity).
const workspaceObjectIDDoc = "`<workspace_path>/<name>`, the import ID."

// importIDAttribute is a resource's id, the import ID that desc spells
// out: computed at create, and the same in every plan after.
func importIDAttribute(desc string) schema.StringAttribute {
	return computedKept(desc)
}

// workspacePathAttribute is a required workspace path that a resource
// lives in or points at. Another path is another object: it replaces the
// resource.
func workspacePathAttribute(desc string) schema.StringAttribute {
	return schema.StringAttribute{
		Required:            true,
		MarkdownDescription: desc,
		Validators:          []validator.String{workspacePathValidator()},
		PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
	}
}

// nameAttribute is the optional name of an object a resource manages or
// points at: def unless set. Another name is another object: it replaces
// the resource.
func nameAttribute(def, desc string, v ...validator.String) schema.StringAttribute {
	return schema.StringAttribute{
		Optional:            true,
		Computed:            true,
		Default:             stringdefault.StaticString(def),
		MarkdownDescription: desc,
		Validators:          v,
		PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
	}
}

// subjectsAttribute is an optional set of the users or the groups that a
// grant binds, each a non-empty name.
func subjectsAttribute(desc string) schema.SetAttribute {
	return schema.SetAttribute{
		Optional:            true,
		ElementType:         types.StringType,
		MarkdownDescription: desc,
		Validators:          []validator.Set{setvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
	}
}

// computedList is a list of strings that only the provider sets, such as
// the rules or claims it reads back from kcp.
func computedList(desc string) schema.ListAttribute {
	return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: desc}
}

// computedKept is a string only the provider sets, and that stays what it
// was in state until the provider reads it again (such as an identity kcp
// assigns once).
func computedKept(desc string) schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: desc, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
}
