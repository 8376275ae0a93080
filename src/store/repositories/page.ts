/** Offset pagination shared by every list query. */
export interface PageRequest {
  limit: number;
  offset: number;
}

export interface Page<T> {
  data: T[];
  pagination: { total: number; limit: number; offset: number; hasMore: boolean };
}

export function toPage<T>(data: T[], total: number, page: PageRequest): Page<T> {
  return {
    data,
    pagination: { total, limit: page.limit, offset: page.offset, hasMore: page.offset + data.length < total },
  };
}

export function toBool(flag: number): boolean {
  return flag !== 0;
}
