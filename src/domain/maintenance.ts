/**
 * The checks of maintenance mode, as Consul names them: `_node_maintenance` on a node and
 * `_service_maintenance:<id>` on a service instance. They are critical checks without a probe (kind ""),
 * registered and removed by the maintenance endpoints only.
 */

export const nodeMaintenanceCheckId = '_node_maintenance';
export const serviceMaintenancePrefix = '_service_maintenance:';

export function serviceMaintenanceCheckId(serviceId: string): string {
  return `${serviceMaintenancePrefix}${serviceId}`;
}

export function isMaintenanceCheck(checkId: string): boolean {
  return checkId === nodeMaintenanceCheckId || checkId.startsWith(serviceMaintenancePrefix);
}
