// `dclctl import netbox`, the mapping: what NetBox's REST API returns for
// /api/dcim/{sites,racks,device-types,devices,rack-reservations,power-panels,power-feeds,
// power-ports}/ (list responses,
// `{"count", "next", "previous", "results": [...]}`, one or several pages per list, NetBox's own
// field names) → what dcl should hold: sites, racks with their geometry, devices, placements and
// blockings; what is skipped because it takes no rack unit, and what is refused because it
// should take units and cannot (each with its reason). Pure: no I/O beyond the strings it is
// given, no gRPC. netbox_client.h fetches the pages, netbox_applier.h writes the plan.
// In two halves: netbox_export.h parses the pages, netbox_plan.h decides what to create.
//
// Mapping decisions (docs/netbox.md has the full table):
//  - racks: u_height → unit_count (1..100 whole units, else refused), starting_unit →
//    first_unit, desc_units → numbering. form_factor (NetBox ≥ 4.1; `type` before, same values)
//    decides the rear, value by value (RackHasRear): only 2-post frames and wall-mounted frames
//    have one mounting plane; null means NetBox does not know, read as the expensive case (a
//    rear); a value not in NetBox's choices refuses the rack.
//  - devices: position → PlaceDevice's unit (the physically lowest unit: in a descending rack
//    position + height - 1); the device type's u_height a whole number 1..20. Skipped (they
//    take no rack unit dcl can book): 0U, half-U device types, children in a chassis, devices
//    without rack or position. Refused: a device that should take units and cannot (its rack
//    refused, a fractional position, a height above 20, an unknown type, a half-depth device
//    on a rack with a rear whose face NetBox does not record — its side is never guessed).
//    is_full_depth → full or half. NetBox status active → normal; every other → staging.
//  - rack reservations have no end in NetBox, while a dcl reservation of units expires, so
//    they become blockings of the units that are free; units a device of the plan already
//    takes are reported as held, with what holds them (NetBox reservations never block
//    devices).
//  - capacity: a rack's active power feeds 1:1 (FeedOf; a feed of another site's panel, of an
//    unread panel, or with figures dcl cannot read refuses the rack: imported without them its
//    devices would face no budget); max_weight → the weight budget in kg rounded down, the
//    rack's airflow. A device's power is the sum of its power ports' allocated_draw (unknown
//    when a port records none, never guessed), its port count theirs, its weight its type's in
//    kg rounded up (Kilograms), its airflow its own or its type's (AirflowOf). Corrupt figures
//    refuse the device; figures not recorded are listed in Plan::unknown.
//  - request ids are derived from NetBox ids (DerivedRequestId), so a re-run replays.
#ifndef DCL_DCLCTL_NETBOX_NETBOX_MAPPING_H_
#define DCL_DCLCTL_NETBOX_NETBOX_MAPPING_H_

#include "dclctl/netbox/netbox_export.h"  // IWYU pragma: export
#include "dclctl/netbox/netbox_plan.h"    // IWYU pragma: export

#endif  // DCL_DCLCTL_NETBOX_NETBOX_MAPPING_H_
