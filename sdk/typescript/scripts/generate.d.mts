export declare function generate(doc: unknown, source?: string): Promise<Record<string, string>>;
