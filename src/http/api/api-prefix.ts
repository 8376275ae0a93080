/** Where the Data API's routes live: apart, so that the pipeline can name it without importing the routes. */
export const API_PREFIX = '/developer/v1';
