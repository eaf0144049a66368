/**
 * The part of Perfetto's trace schema that ptkit's `--perfetto` timeline uses, written
 * here as descriptors (the equivalent of .proto text, package perfetto.protos, proto2),
 * for the tests to decode the output with @bufbuild/protobuf. Each message names the
 * Perfetto file it mirrors (protos/perfetto/trace/...); only the fields ptkit writes or
 * a reader of its output would look at are listed, oneofs as plain optional fields
 * (the wire format is the same). The field numbers are Perfetto's: see the table in
 * src/analysis/export/perfetto.ts.
 */
import { create, createFileRegistry, type DescMessage, fromBinary } from "@bufbuild/protobuf";
import {
  type DescriptorProto,
  DescriptorProtoSchema,
  EnumDescriptorProtoSchema,
  type FieldDescriptorProto,
  FieldDescriptorProtoSchema,
  FileDescriptorProtoSchema,
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
} from "@bufbuild/protobuf/wkt";

type Field = [name: string, number: number, type: Type | string, repeated?: "repeated"];

/** A field of a scalar `type`, or of message/enum `type` (a name in the package). */
function field([name, number, type, repeated]: Field): FieldDescriptorProto {
  const named = typeof type === "string";
  return create(FieldDescriptorProtoSchema, {
    name,
    number,
    label: repeated ? Label.REPEATED : Label.OPTIONAL,
    type: named ? (type.startsWith("enum ") ? Type.ENUM : Type.MESSAGE) : type,
    typeName: named ? `.perfetto.protos.${type.replace(/^enum /, "")}` : undefined,
  });
}

function message(name: string, fields: Field[], nested: DescriptorProto[] = []): DescriptorProto {
  return create(DescriptorProtoSchema, { name, field: fields.map(field), nestedType: nested });
}

/** Interned entries: EventCategory, EventName (track_event.proto), DebugAnnotationName (debug_annotation.proto). */
const INTERNED: Field[] = [
  ["iid", 1, Type.UINT64],
  ["name", 2, Type.STRING],
];

const file = create(FileDescriptorProtoSchema, {
  name: "ptkit/perfetto_subset.proto",
  package: "perfetto.protos",
  syntax: "proto2",
  messageType: [
    // trace.proto
    message("Trace", [["packet", 1, "TracePacket", "repeated"]]),
    // trace_packet.proto
    message("TracePacket", [
      ["timestamp", 8, Type.UINT64],
      ["trusted_packet_sequence_id", 10, Type.UINT32],
      ["track_event", 11, "TrackEvent"],
      ["interned_data", 12, "InternedData"],
      ["sequence_flags", 13, Type.UINT32],
      ["incremental_state_cleared", 41, Type.BOOL],
      ["timestamp_clock_id", 58, Type.UINT32],
      ["track_descriptor", 60, "TrackDescriptor"],
    ]),
    // track_event/track_event.proto
    message("TrackEvent", [
      ["category_iids", 3, Type.UINT64, "repeated"],
      ["debug_annotations", 4, "DebugAnnotation", "repeated"],
      ["type", 9, "enum TrackEvent.Type"],
      ["name_iid", 10, Type.UINT64],
      ["track_uuid", 11, Type.UINT64],
      ["categories", 22, Type.STRING, "repeated"],
      ["name", 23, Type.STRING],
    ]),
    message("EventCategory", INTERNED),
    message("EventName", INTERNED),
    // track_event/debug_annotation.proto
    message("DebugAnnotation", [
      ["name_iid", 1, Type.UINT64],
      ["bool_value", 2, Type.BOOL],
      ["uint_value", 3, Type.UINT64],
      ["int_value", 4, Type.INT64],
      ["double_value", 5, Type.DOUBLE],
      ["string_value", 6, Type.STRING],
      ["name", 10, Type.STRING],
    ]),
    message("DebugAnnotationName", INTERNED),
    // track_event/track_descriptor.proto
    message("TrackDescriptor", [
      ["uuid", 1, Type.UINT64],
      ["name", 2, Type.STRING],
      ["process", 3, "ProcessDescriptor"],
      ["thread", 4, "ThreadDescriptor"],
      ["parent_uuid", 5, Type.UINT64],
    ]),
    // track_event/process_descriptor.proto
    message("ProcessDescriptor", [
      ["pid", 1, Type.INT32],
      ["process_name", 6, Type.STRING],
    ]),
    // track_event/thread_descriptor.proto
    message("ThreadDescriptor", [
      ["pid", 1, Type.INT32],
      ["tid", 2, Type.INT32],
      ["thread_name", 5, Type.STRING],
    ]),
    // interned_data/interned_data.proto
    message("InternedData", [
      ["event_categories", 1, "EventCategory", "repeated"],
      ["event_names", 2, "EventName", "repeated"],
      ["debug_annotation_names", 3, "DebugAnnotationName", "repeated"],
    ]),
  ],
});
// TrackEvent.Type (track_event.proto).
file.messageType[2]!.enumType.push(
  create(EnumDescriptorProtoSchema, {
    name: "Type",
    value: ["TYPE_UNSPECIFIED", "TYPE_SLICE_BEGIN", "TYPE_SLICE_END", "TYPE_INSTANT", "TYPE_COUNTER"].map(
      (name, number) => ({ name, number }),
    ),
  }),
);

const registry = createFileRegistry(file, () => undefined);
export const TRACE: DescMessage = registry.getMessage("perfetto.protos.Trace")!;

/** The decoded messages, as plain objects (64-bit fields as bigint). */
export interface Interned {
  iid: bigint;
  name: string;
}
export interface Annotation {
  nameIid: bigint;
  intValue: bigint;
  uintValue: bigint;
  stringValue: string;
}
export interface TrackEvent {
  categoryIids: bigint[];
  debugAnnotations: Annotation[];
  type: number;
  nameIid: bigint;
  trackUuid: bigint;
}
export interface TrackDescriptor {
  uuid: bigint;
  parentUuid: bigint;
  process?: { pid: number; processName: string };
  thread?: { pid: number; tid: number; threadName: string };
}
export interface TracePacket {
  timestamp: bigint;
  trustedPacketSequenceId: number;
  sequenceFlags: number;
  trackEvent?: TrackEvent;
  trackDescriptor?: TrackDescriptor;
  internedData?: { eventCategories: Interned[]; eventNames: Interned[]; debugAnnotationNames: Interned[] };
}

/** `bytes` decoded as a Perfetto Trace. */
export function decodeTrace(bytes: Uint8Array): TracePacket[] {
  const trace = fromBinary(TRACE, bytes) as unknown as { packet: TracePacket[] };
  return trace.packet;
}
